#!/bin/bash
# Boot test: the package in a Debian 12 virtual machine with systemd as PID 1 (QEMU, no KVM
# needed), to see what a chroot cannot: the unit's sandbox running the Swift binary, and udev
# starting gattway.service when an HCI adapter appears (a virtual one, from the kernel's
# hci_vhci, with bluetoothd running). Exit 0 pass, 1 fail, 77 skipped (reason printed).
#
#   Tests/deploy/vm-test.sh [PACKAGE.deb]     # default: builds one with deploy/build-deb.sh
#
# The virtual controller answers no HCI command, so `gattway run` could never come up there: a
# drop-in makes the service run `gattway --version` under the unchanged sandbox instead; everything
# else is the installed unit.
# Needs root, qemu-system-x86_64, mkfs.ext4, and a Debian mirror the first time (the VM root with
# its kernel and bluez is cached in ${GATTWAY_CACHE:-$HOME/.cache/gattway}/debian12-vm-root).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}
vm_root=$cache/debian12-vm-root
mirror=${GATTWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
started=$SECONDS

skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) == 0 ]] || skip "needs root for chroot, mounts and mkfs"
for tool in qemu-system-x86_64 mkfs.ext4 debootstrap chroot; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/gattway-vm-test.XXXXXX")
mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
    done
    mounted=()
    if findmnt -rn -o TARGET | grep -q -e "^$work/" -e "^$vm_root.partial/"; then
        echo "cleanup: mounts remain; not deleting $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT
with_mounts() { # with_mounts ROOT COMMAND...: run COMMAND in ROOT with /proc and /dev
    local root=$1; shift
    mount -t proc proc "$root/proc" && mounted+=("$root/proc")
    mount --bind /dev "$root/dev" && mounted+=("$root/dev")
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
    local rc=$?
    umount "$root/dev" "$root/proc"
    mounted=()
    return $rc
}

if [[ ! -d $vm_root ]]; then
    echo "== VM root (once): Debian 12 with a kernel, initramfs, bluez"
    rm -rf "$vm_root.partial"
    debootstrap --variant=minbase --include=systemd,udev bookworm "$vm_root.partial" "$mirror" \
        > "$work/debootstrap.log" 2>&1 || skip "debootstrap failed (network?)"
    cp -L /etc/resolv.conf "$vm_root.partial/etc/resolv.conf"
    with_mounts "$vm_root.partial" apt-get install -y --no-install-recommends \
        linux-image-amd64 initramfs-tools bluez dbus kmod > "$work/kernel.log" 2>&1 \
        || skip "installing the kernel into the VM root failed (network?), see $work/kernel.log"
    echo "/dev/vda / ext4 rw 0 1" > "$vm_root.partial/etc/fstab"
    mv "$vm_root.partial" "$vm_root"
fi

deb=${1:-}
if [[ -z $deb ]]; then
    deb=$(GATTWAY_DEB_OUT=$work "$repo/deploy/build-deb.sh") || { echo "FAIL - deploy/build-deb.sh"; exit 1; }
fi

echo "== VM disk: the cached root, the package, the check"
root=$work/root
cp -a "$vm_root" "$root"
cp "$deb" "$root/tmp/gattway.deb"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
with_mounts "$root" apt-get install -y --no-install-recommends /tmp/gattway.deb > "$work/apt.log" 2>&1 \
    || { sed 's/^/     apt: /' "$work/apt.log"; echo "FAIL - apt-get install in the VM root"; exit 1; }
mkdir -p "$root/etc/systemd/system/gattway.service.d"
cat > "$root/etc/systemd/system/gattway.service.d/vm-test.conf" <<'EOF'
[Service]
Type=exec
ExecStart=
ExecStart=/usr/bin/gattway --version
Restart=no
EOF
cat > "$root/usr/local/sbin/vm-check" <<'EOF'
#!/bin/bash
# Runs once at boot, reports "VMCHECK ok|FAIL - ..." lines on the serial console, powers off.
exec > /dev/ttyS0 2>&1
report() { if eval "$2"; then echo "VMCHECK ok   - $1"; else echo "VMCHECK FAIL - $1"; fi; }
starts() { journalctl -b -u gattway --no-pager -o cat | grep -c '^Started gattway'; }
report "gattway.service ran gattway under its sandbox at boot and succeeded" \
    '[[ $(systemctl show -P Result gattway) == success ]] && journalctl -b -u gattway -o cat | grep -qx "$(gattway --version)"'
report "it ran as gattway with CAP_NET_ADMIN only" \
    '[[ $(systemctl show -P User gattway) == gattway && $(systemctl show -P AmbientCapabilities gattway) == cap_net_admin ]]'
before=$(starts)
modprobe hci_vhci && exec 3<>/dev/vhci
for _ in $(seq 60); do [[ $(starts) -gt $before ]] && break; sleep 1; done
report "hci0 appeared as a host device wanting gattway.service" \
    'udevadm info /sys/class/bluetooth/hci0 | grep -qx "E: DEVTYPE=host" && udevadm info /sys/class/bluetooth/hci0 | grep -q "^E: SYSTEMD_WANTS=.*gattway.service"'
report "udev started gattway.service again when hci0 appeared" '[[ $(starts) -gt $before ]]'
sleep 5
report "ExecStartPre (release the adapter) and the service succeeded with bluetoothd running" \
    '[[ $(systemctl is-active bluetooth) == active && $(systemctl show -P Result gattway) == success ]]'
report "libdispatch could set its threads' priority (no \"Failed to set thread priority\" in the journal)" \
    '! journalctl -b -u gattway -o cat | grep -q "Failed to set thread priority"'
journalctl -b -u gattway --no-pager -o cat | sed 's/^/VMCHECK journal: /'
echo "VMCHECK done"
systemctl poweroff
EOF
chmod 0755 "$root/usr/local/sbin/vm-check"
cat > "$root/etc/systemd/system/vm-check.service" <<'EOF'
[Unit]
Description=gattway VM boot test
After=multi-user.target
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vm-check
[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/vm-check.service "$root/etc/systemd/system/multi-user.target.wants/"
# The check reports on the serial console; a login prompt there would hang up the console under
# it (vhangup) and swallow the rest of the report.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
cp "$kernel" "$work/vmlinuz" && cp "$initrd" "$work/initrd"
truncate -s 3G "$work/disk.img"
mkfs.ext4 -q -F -d "$root" "$work/disk.img" || { echo "FAIL - mkfs.ext4"; exit 1; }

echo "== boot (QEMU, TCG)"
boot_started=$SECONDS
timeout 900 qemu-system-x86_64 -m 1024 -smp 2 -nographic -no-reboot -nic none \
    -kernel "$work/vmlinuz" -initrd "$work/initrd" \
    -append "root=/dev/vda rw console=ttyS0 init=/lib/systemd/systemd" \
    -drive "file=$work/disk.img,format=raw,if=virtio" > "$work/console.log" 2>&1
results=$(tr -d '\r' < "$work/console.log" | grep -o 'VMCHECK .*')
sed 's/^VMCHECK /     /' <<<"$results"
echo "     (boot and checks $((SECONDS - boot_started)) s, total $((SECONDS - started)) s)"
grep -q '^VMCHECK done' <<<"$results" || { echo "FAIL - the VM did not finish its checks"; exit 1; }
! grep -q '^VMCHECK FAIL' <<<"$results"
