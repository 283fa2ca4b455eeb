#!/usr/bin/env bash
# Builds the Raspberry Pi image a user flashes (`make image`): Debian 13 arm64 for the Pi 3, 4,
# 400, 5 and Zero 2 W, made from Debian's own packages the way raspi.debian.net's images are
# (linux-image-arm64, raspi-firmware, firmware-brcm80211, bluez-firmware; main and
# non-free-firmware), with the arm64 gattway package installed by apt and its service enabled.
#
#   deploy/build-raspi-image.sh [--deb FILE] [--boot-config FILE] [--out DIR] [--raw]
#     → DIR/gattway-<version>-raspi-arm64.img.xz and .img.xz.sha256 (DIR: <repo>/.build/image)
#
#   --deb FILE          the arm64 package (default: deploy/build-deb.sh --arch arm64 builds one)
#   --boot-config FILE  put FILE on the boot partition as gattway.yaml (imported at first boot)
#   --out DIR           where the image goes
#   --raw               write the image uncompressed (.img and .img.sha256), as dd or Raspberry Pi
#                       Imager writes it to a card: the image test boots it at once, and xz -6
#                       alone takes minutes on a 2-core machine
#   --prepare           only make (or check) the cached Pi root, no package, no image
#
# How, with no loop device and no mount of the image (so it runs in a container too): the
# pristine Debian 13 arm64 root that deploy/cross/build-arm64.sh caches is copied, the Pi's
# packages go in with apt under qemu-user (that root is cached too, under
# ${GATTWAY_CACHE:-$HOME/.cache/gattway}/arm64/raspi, and remade when the package list below
# changes: its initramfs alone takes minutes under emulation), then the package, the image's
# own files (deploy/image/) and its default configuration. The boot partition is made with
# mkfs.vfat -C and mcopy, the root with mkfs.ext4 -d, and both are written into a partitioned
# file (sfdisk, MBR as every Pi's firmware reads) with dd.
#
# What the image holds, and what it must not: no password for any account (SSH takes only a key
# put on the boot partition, deploy/image/gattway-setup.txt); /etc/machine-id "uninitialized" and no SSH
# host keys, so that each Pi makes its own at first boot; DHCP on Ethernet (and on Wi-Fi once
# configured) through systemd-networkd; a first-boot unit that grows the root to the card.
#
# Needs root (chroot, file ownership), what build-arm64.sh needs, and dosfstools, mtools,
# fdisk (sfdisk), e2fsprogs, xz-utils.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
files=$repo/deploy/image
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}/arm64
mirror=${GATTWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
raspi=$cache/raspi

say() { echo "build-raspi-image: $*" >&2; }
fail() { echo "build-raspi-image: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit "${1:-0}"; }

deb='' boot_config='' out=$repo/.build/image prepare=false raw=false
while (($#)); do
    case $1 in
        --deb) deb=${2:?--deb needs a file}; shift 2 ;;
        --boot-config) boot_config=${2:?--boot-config needs a file}; shift 2 ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --raw) raw=true; shift ;;
        --prepare) prepare=true; shift ;;
        -h | --help) usage 0 ;;
        *) echo "build-raspi-image: unknown option $1" >&2; usage 2 ;;
    esac
done
[[ $(id -u) == 0 ]] || fail "needs root (chroot, file ownership); run it with sudo"
for tool in mkfs.vfat mcopy mmd sfdisk mkfs.ext4 xz sha256sum dpkg-deb; do
    command -v "$tool" >/dev/null \
        || fail "$tool is not installed (apt-get install dosfstools mtools fdisk e2fsprogs xz-utils)"
done
[[ -z $boot_config || -f $boot_config ]] || fail "--boot-config: no file $boot_config"
started=$SECONDS

# 1. The package.
if $prepare; then
    :
elif [[ -z $deb ]]; then
    deb=$("$repo/deploy/build-deb.sh" --arch arm64 | tail -n 1) || fail "deploy/build-deb.sh --arch arm64 failed"
fi
$prepare || [[ -f $deb ]] || fail "--deb: no file $deb"
$prepare || [[ $(dpkg-deb --field "$deb" Package 2>/dev/null) == gattway && $(dpkg-deb --field "$deb" Architecture) == arm64 ]] \
    || fail "$deb is not an arm64 gattway package (build one with deploy/build-deb.sh --arch arm64)"

# 2. The Pi's Debian root (cached): the kernel and the Pi's boot firmware, the Wi-Fi and Bluetooth
# firmware, networking, SSH, growing the root, and the gattway package's own dependencies (so an
# image with a new package downloads nothing when they did not change). systemd-sysv makes
# systemd /sbin/init: the minbase root has systemd, but the kernel finds no init without it.
# build-arm64.sh holds its lock while it compiles; a base root it finished is used without it.
base=$cache/base
if [[ ! -f $base/.gattway-complete ]]; then
    base=$("$repo/deploy/cross/build-arm64.sh" --base) || fail "no Debian 13 arm64 root (deploy/cross/build-arm64.sh --base)"
fi
raspi_packages="linux-image-arm64 raspi-firmware firmware-brcm80211 bluez-firmware initramfs-tools
 systemd-resolved systemd-timesyncd wpasupplicant wireless-regdb openssh-server
 fdisk e2fsprogs dbus kmod iproute2 gpiod libgpiod3 libmosquitto1 libyaml-0-2 adduser zstd systemd-sysv"
raspi_packages=$(echo $raspi_packages)
raspi_stamp="$(cat "$base/.gattway-complete"); trixie main non-free-firmware: $raspi_packages; $(sha256sum <"$files/raspi-firmware.default" | cut -c1-16)"
# dpkg's unsafe I/O: no fsync per unpacked file. The root is a build product, written out whole
# (and synced) into the image, and the fsyncs were what slowed the stages running beside it.
apt_options=(-o Acquire::Check-Valid-Until=false -o Acquire::Retries=3 -o Dpkg::Options::=--force-confold -o Dpkg::Options::=--force-unsafe-io)
# inside ROOT COMMAND...: a command inside ROOT with /proc, /sys and /dev, in a private mount
# namespace (so nothing stays mounted when it ends, whatever happens).
inside() {
    local root=$1; shift
    unshare --mount --propagation private -- /bin/bash -c '
        root=$1; shift
        mount -t proc proc "$root/proc"; mount -t sysfs sysfs "$root/sys"; mount --bind /dev "$root/dev"
        exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"' _ "$root" "$@"
}
exec 9>"$cache/.raspi-lock"
flock 9
if [[ ! -f $raspi/.gattway-complete || $(cat "$raspi/.gattway-complete") != "$raspi_stamp" ]]; then
    say "making the Pi's Debian root in $raspi (apt under qemu-user; the initramfs takes minutes)"
    rm -rf "$raspi.partial" "$raspi"
    cp -a "$base" "$raspi.partial"
    rm -f "$raspi.partial/.gattway-complete"
    cat >"$raspi.partial/etc/apt/sources.list" <<EOF
deb $mirror trixie main non-free-firmware
deb $mirror trixie-updates main non-free-firmware
deb http://security.debian.org/debian-security trixie-security main non-free-firmware
EOF
    # raspi-firmware's settings before it is installed, or dpkg stops at a conffile prompt.
    install -m 0644 "$files/raspi-firmware.default" "$raspi.partial/etc/default/raspi-firmware"
    # Nothing starts inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$raspi.partial/usr/sbin/policy-rc.d"
    chmod 0755 "$raspi.partial/usr/sbin/policy-rc.d"
    cp -L /etc/resolv.conf "$raspi.partial/etc/resolv.conf"
    # The initramfs is made once, after every package is in: left to dpkg, the kernel's hook makes
    # it and initramfs-tools' trigger makes it again, each time for many minutes under emulation.
    inside "$raspi.partial" dpkg-divert --quiet --local --rename --add /usr/sbin/update-initramfs
    printf '#!/bin/sh\n# made once by build-raspi-image.sh after apt\nexit 0\n' >"$raspi.partial/usr/sbin/update-initramfs"
    chmod 0755 "$raspi.partial/usr/sbin/update-initramfs"
    inside "$raspi.partial" apt-get "${apt_options[@]}" update -qq >&2 || fail "apt-get update failed in the Pi's root"
    inside "$raspi.partial" apt-get "${apt_options[@]}" install -y -qq --no-install-recommends $raspi_packages \
        >"$cache/raspi-apt.log" 2>&1 \
        || { tail -n 30 "$cache/raspi-apt.log" >&2; fail "installing the Pi's packages failed (see $cache/raspi-apt.log)"; }
    rm "$raspi.partial/usr/sbin/update-initramfs"
    inside "$raspi.partial" dpkg-divert --quiet --local --rename --remove /usr/sbin/update-initramfs
    # raspi-firmware's initramfs hook copies the new initrd to /boot/firmware beside the kernel.
    inside "$raspi.partial" update-initramfs -c -k all >>"$cache/raspi-apt.log" 2>&1 \
        || { tail -n 30 "$cache/raspi-apt.log" >&2; fail "update-initramfs failed in the Pi's root (see $cache/raspi-apt.log)"; }
    rm -f "$raspi.partial"/var/cache/apt/archives/*.deb
    ls "$raspi.partial"/boot/firmware/vmlinuz* "$raspi.partial"/boot/firmware/initrd.img* >/dev/null 2>&1 \
        || fail "raspi-firmware put no kernel and initrd into /boot/firmware (see $cache/raspi-apt.log)"
    echo "$raspi_stamp" >"$raspi.partial/.gattway-complete"
    mv "$raspi.partial" "$raspi"
fi
flock -u 9
if $prepare; then
    say "the Pi's Debian root is ready in $raspi ($((SECONDS - started)) s)"
    exit 0
fi
version=$(dpkg-deb --field "$deb" Version)
name=gattway-$version-raspi-arm64

# 3. This image's root: a copy of the cached one, the package, the image's files.
work=$(mktemp -d "${TMPDIR:-/var/tmp}/gattway-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
cp -a "$raspi" "$root"
rm -f "$root/.gattway-complete"
cp "$deb" "$root/tmp/gattway.deb"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
say "installing $(basename "$deb")"
# The cached root's package lists may be old: when apt cannot get a new dependency from them,
# they are fetched again once.
install_package() {
    inside "$root" apt-get "${apt_options[@]}" install -y -qq --no-install-recommends /tmp/gattway.deb >>"$work/apt.log" 2>&1
}
if ! install_package; then
    inside "$root" apt-get "${apt_options[@]}" update -qq >>"$work/apt.log" 2>&1 && install_package \
        || { tail -n 30 "$work/apt.log" >&2; fail "apt-get install of the package failed in the image root"; }
fi
rm -f "$root/tmp/gattway.deb"

# The image's configuration: the package's example names GPIO lines and a broker no fresh Pi
# has; this one runs as it is (no sensors, no MQTT) and gives each Pi its own name.
install -m 0640 -o root -g "$(inside "$root" getent group gattway | cut -d: -f3)" \
    "$files/gattway.yaml" "$root/etc/gattway/gattway.yaml"
install -d -m 0755 "$root/usr/local/libexec/gattway"
install -m 0755 "$repo/deploy/pi-gen/stage-gattway/00-gattway/files/gattway-import-boot-config" \
    "$files/gattway-first-boot" "$files/gattway-boot-setup" "$root/usr/local/libexec/gattway/"
install -m 0644 "$repo/deploy/pi-gen/stage-gattway/00-gattway/files/gattway-import-boot-config.service" \
    "$files/gattway-first-boot.service" "$files/gattway-boot-setup.service" "$root/etc/systemd/system/"
install -m 0644 "$files/fstab" "$root/etc/fstab"
install -d -m 0755 "$root/etc/systemd/network"
install -m 0644 "$files/10-ethernet.network" "$files/20-wifi.network" "$root/etc/systemd/network/"
echo gattway >"$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tgattway\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
# SSH: keys only, from the boot partition (gattway-boot-setup); no account has a password.
install -d -m 0755 "$root/etc/ssh/sshd_config.d"
printf 'PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n' \
    >"$root/etc/ssh/sshd_config.d/gattway.conf"
inside "$root" passwd --lock root >/dev/null
inside "$root" systemctl enable --quiet systemd-networkd systemd-resolved systemd-timesyncd ssh \
    gattway.service gattway-import-boot-config.service gattway-first-boot.service gattway-boot-setup.service
inside "$root" systemctl disable --quiet wpa_supplicant.service 2>/dev/null || true
# systemd's first-boot wizard asks on the console for a locale, a keymap, a time zone and a root
# password, and waits: a headless Pi would never finish its first boot.
inside "$root" systemctl mask --quiet systemd-firstboot.service
# What each Pi makes for itself at first boot: its machine id (systemd, from "uninitialized") and
# its SSH host keys (gattway-first-boot); and what belongs to the build machine.
rm -f "$root"/etc/ssh/ssh_host_*_key "$root"/etc/ssh/ssh_host_*_key.pub "$root/usr/sbin/policy-rc.d" \
    "$root/var/lib/dbus/machine-id" "$root/var/lib/systemd/random-seed" "$root/var/lib/systemd/credential.secret"
# "uninitialized", not an empty file: systemd counts only a missing or "uninitialized" machine id
# as a first boot (machine-id(5)); with an empty one it makes an id but skips ConditionFirstBoot units.
echo uninitialized >"$root/etc/machine-id"
ln -sf ../run/systemd/resolve/stub-resolv.conf "$root/etc/resolv.conf"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log "$root"/tmp/* "$root"/root/.bash_history
grep -q '^root:[!*]' "$root/etc/shadow" || fail "root has a password in the image"
if awk -F: '$2 !~ /^[!*]/ {print $1}' "$root/etc/shadow" | grep -q .; then
    fail "accounts with a password in the image: $(awk -F: '$2 !~ /^[!*]/ {print $1}' "$root/etc/shadow" | xargs)"
fi

# 4. The boot partition (FAT32, RASPIFIRM): what raspi-firmware laid out, the setup template,
# and the optional gattway.yaml.
boot_mib=256
mv "$root/boot/firmware" "$work/firmware"
install -d -m 0755 "$root/boot/firmware"
install -m 0644 "$files/gattway-setup.txt" "$work/firmware/gattway-setup.txt.example"
[[ -n $boot_config ]] && install -m 0644 "$boot_config" "$work/firmware/gattway.yaml"
mkfs.vfat -C -F 32 -n RASPIFIRM "$work/boot.vfat" $((boot_mib * 1024)) >/dev/null
mcopy -s -p -m -i "$work/boot.vfat" "$work/firmware"/* ::/

# 5. The root partition (ext4, RASPIROOT): its data and a quarter more, at least 256 MiB free;
# the first boot grows it to the card.
used_mib=$(($(du -s --block-size=1M "$root" | cut -f1)))
root_mib=$((used_mib + (used_mib / 4 > 256 ? used_mib / 4 : 256)))
mkfs.ext4 -q -b 4096 -L RASPIROOT -d "$root" -E root_owner=0:0 "$work/root.ext4" "${root_mib}M"

# 6. The image: MBR, the boot partition at 4 MiB (type c, FAT32 LBA), the root right after.
image=$work/$name.img
image_mib=$((4 + boot_mib + root_mib))
truncate -s "${image_mib}M" "$image"
sfdisk --quiet "$image" <<EOF
label: dos
start=4MiB, size=${boot_mib}MiB, type=c
start=$((4 + boot_mib))MiB, type=83
EOF
dd if="$work/boot.vfat" of="$image" bs=1M seek=4 conv=notrunc,sparse status=none
dd if="$work/root.ext4" of="$image" bs=1M seek=$((4 + boot_mib)) conv=notrunc,sparse status=none

mkdir -p "$out"
if $raw; then
    mv "$image" "$out/$name.img"
    (cd "$out" && sha256sum "$name.img" >"$name.img.sha256")
    say "$out/$name.img: ${image_mib} MiB raw, not compressed, in $((SECONDS - started)) s"
    echo "$out/$name.img"
    exit 0
fi
say "compressing ${image_mib} MiB (xz)"
xz -T0 -6 -c "$image" >"$out/$name.img.xz.partial"
mv "$out/$name.img.xz.partial" "$out/$name.img.xz"
(cd "$out" && sha256sum "$name.img.xz" >"$name.img.xz.sha256")
say "$out/$name.img.xz: $(du -m --apparent-size "$out/$name.img.xz" | cut -f1) MiB compressed, ${image_mib} MiB raw, in $((SECONDS - started)) s"
echo "$out/$name.img.xz"
