#!/usr/bin/env bash
# Runs one command inside a throw-away VM booted from Debian 12's own kernel, and returns the
# command's output and exit status:
#
#   Tests/vm/run-in-vm.sh [--gpio-sim] [--module NAME]... [--env NAME=VALUE]... [--disk FILE]
#                         [--pidfile FILE] [--timeout S] -- CMD ARGS...
#
# The kernel (linux-image-<abi>, the one linux-image-amd64 currently points to) is downloaded with
# `apt-get download` and unpacked with `dpkg -x`, never installed. It boots under
# qemu-system-x86_64 with software emulation (TCG) through a tiny busybox initramfs, which mounts
# this machine's root read-only over 9p with a tmpfs overlay on top, the kernel's modules over
# 9p at /lib/modules/<abi>, and runs CMD in it (same working directory, PATH, GATTWAY_* variables)
# as root. Writes inside the VM vanish with it.
#
#   --gpio-sim    load gpio-sim (built out of tree against the matching headers, see below) and
#                 create chip `gattway-sim` with 8 lines SIM0..SIM7; CMD gets
#                 GATTWAY_GPIOSIM_CHIP=/dev/gpiochipN and
#                 GATTWAY_GPIOSIM_SYSFS=/sys/devices/platform/gpio-sim.M/gpiochipN
#                 (drive input k: echo pull-up|pull-down > $GATTWAY_GPIOSIM_SYSFS/sim_gpio<k>/pull;
#                 read output k: cat $GATTWAY_GPIOSIM_SYSFS/sim_gpio<k>/value); and three chips
#                 labelled like a Raspberry Pi's pin controller as each kernel names its lines,
#                 GATTWAY_GPIOSIM_PI_CHIPS="raspberry-pi-os=DEV:SYSFS mainline=DEV:SYSFS
#                 unnamed=DEV:SYSFS" (see guest-setup.sh).
#   --module M    modprobe M before CMD (e.g. hci_vhci for /dev/vhci).
#   --disk FILE   attach FILE (a raw disk image) as /dev/vda, opened without the host's page cache
#                 (cache=none: O_DIRECT), so what the guest has not flushed is lost when qemu dies,
#                 as at a power cut (load virtio_blk and the file system with --module).
#   --pidfile F   qemu writes its pid to F (to kill it from outside: a power cut).
#   --prepare     only download and build what is needed (kernel, modules, gpio-sim, initramfs).
#
# Debian's kernel lacks gpio-sim (and the irq_sim it needs): both are compiled from
# linux-source-<version> of the same version against linux-headers-<abi>, with irq_sim's
# irq_to_desc() (not exported to modules) replaced by generic_handle_irq().
#
# Everything is cached in ${GATTWAY_CACHE:-$HOME/.cache/gattway}/vm/<abi> (about 400 MB).
# Exit status: CMD's status; 77 when the VM cannot run (reason printed: qemu missing, download
# impossible, ...); 1 when the VM itself failed (boot failure, timeout; console log printed).
# Environment: GATTWAY_VM_KERNEL_ABI + GATTWAY_VM_KERNEL_VERSION (pin a kernel, e.g. 6.1.0-56-amd64
# and 6.1.192-2), GATTWAY_VM_MEMORY (MB, default 1024), GATTWAY_VM_CPUS (default 1),
# GATTWAY_VM_VERBOSE=1 (show the kernel console).
set -euo pipefail

readonly SKIP=77
say() { echo "[vm] $*" >&2; }
skip() { echo "[vm] SKIPPED: $*" >&2; exit "$SKIP"; }
die() { echo "[vm] FAILED: $*" >&2; exit 1; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}

gpio_sim=0 prepare_only=0 timeout_s=900 disk= pidfile=
modules=() extra_env=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --gpio-sim) gpio_sim=1 ;;
    --module) modules+=("$2"); shift ;;
    --env) extra_env+=("$2"); shift ;;
    --timeout) timeout_s=$2; shift ;;
    --disk) disk=$2; shift ;;
    --pidfile) pidfile=$2; shift ;;
    --prepare) prepare_only=1 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
[[ $prepare_only == 1 || $# -gt 0 ]] || die "no command given (usage: $0 [options] -- CMD ARGS...)"

# --- Preconditions -------------------------------------------------------------------------
command -v qemu-system-x86_64 >/dev/null \
    || skip "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
[[ $EUID -eq 0 ]] || skip "must run as root (the VM shares this machine's whole root filesystem)"
for tool in apt-get apt-cache dpkg dpkg-deb tar xz make gcc timeout; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed"
done

# The kernel: what linux-image-amd64 currently depends on, e.g. 6.1.0-56-amd64 at 6.1.192-2.
# Asking apt takes seconds, so the answer is kept until apt's package lists change.
abi=${GATTWAY_VM_KERNEL_ABI:-}
version=${GATTWAY_VM_KERNEL_VERSION:-}
current=$cache/vm/current-kernel
if [[ -z $abi || -z $version ]]; then
    if [[ -f $current && -z $(find /var/lib/apt/lists -newer "$current" -name '*Packages*' 2>/dev/null | head -n 1) ]]; then
        read -r abi version <"$current"
    else
        depends=$(apt-cache show linux-image-amd64 2>/dev/null | sed -n 's/^Depends: //p' | head -n 1)
        [[ $depends =~ linux-image-([0-9.]+-[0-9]+-amd64)\ \(=\ ([^\)]+)\) ]] \
            || skip "cannot tell Debian's current kernel from apt (run apt-get update)"
        abi=${BASH_REMATCH[1]} version=${BASH_REMATCH[2]}
        mkdir -p "$cache/vm"
        echo "$abi $version" >"$current"
    fi
fi
series=$(echo "$abi" | sed -E 's/^([0-9]+\.[0-9]+)\..*/\1/') # 6.1.0-56-amd64 -> 6.1
flavourless=${abi%-amd64}                                     # 6.1.0-56

vmcache=$cache/vm/$abi
tree=$vmcache/tree
modroot=$tree/lib/modules/$abi
busybox=$tree/bin/busybox
initramfs=$vmcache/initramfs.cpio.gz
stamp=$vmcache/.complete

# --- Preparation (once per kernel version) ----------------------------------------------------
# Modules the initramfs loads itself, to reach the root over 9p and build the overlay; the order
# is resolved from modules.dep.
initramfs_modules=(virtio_pci 9pnet_virtio 9p overlay)

module_closure() { # prints module paths (relative to $modroot) deps first, no duplicates
    local -A seen=()
    local out=()
    visit() {
        local name=$1 line path dep
        line=$(grep -E "(^|/)${name//_/[_-]}\.ko:" "$modroot/modules.dep" | head -n 1) \
            || die "module $name is not in $abi"
        path=${line%%:*}
        [[ -n ${seen[$path]:-} ]] && return
        seen[$path]=1
        for dep in ${line#*:}; do
            dep=${dep##*/}
            visit "${dep%.ko}"
        done
        out+=("$path")
    }
    local m
    for m in "$@"; do visit "$m"; done
    printf '%s\n' "${out[@]}"
}

# The version of PACKAGE to download for the kernel at VERSION: VERSION itself, or when the archive
# no longer has it, its newest build of the same upstream release. Debian's security archive keeps
# only the newest build of packages such as linux-kbuild, which a new Debian revision (6.1.192-3)
# can replace while the signed kernel image is still the one before it (6.1.192-2); the tools and
# sources of one upstream release build the same modules.
same_release_version() {
    local package=$1 wanted=$2 listed
    listed=$(apt-cache madison "$package" 2>/dev/null | awk -F' *[|] *' '{print $2}')
    if grep -qxF "$wanted" <<<"$listed"; then
        echo "$wanted"
        return
    fi
    local newest
    newest=$(awk -v release="${wanted%-*}-" 'index($0, release) == 1' <<<"$listed" | sort -V | tail -n 1)
    echo "${newest:-$wanted}"
}

prepare() {
    say "preparing kernel $abi ($version) in $vmcache (downloads ~230 MB, once)"
    rm -rf "$vmcache"
    find "$cache/vm" -mindepth 1 -maxdepth 1 -type d -name '*-amd64' -exec rm -rf {} + # older kernels
    mkdir -p "$vmcache/debs" "$tree" "$vmcache/gpio-sim"
    local packages=(
        "linux-image-$abi=$version" "linux-headers-$abi=$version"
        "linux-headers-$flavourless-common=$version"
        "linux-kbuild-$series=$(same_release_version "linux-kbuild-$series" "$version")"
        "linux-source-$series=$(same_release_version "linux-source-$series" "$version")" busybox-static
    )
    (cd "$vmcache/debs" && apt-get download "${packages[@]}") >"$vmcache/download.log" 2>&1 || {
        tail -n 5 "$vmcache/download.log" >&2
        skip "cannot download ${packages[*]} (see $vmcache/download.log)"
    }
    local deb
    for deb in "$vmcache"/debs/*.deb; do
        case ${deb##*/} in
        linux-source-*)
            # Only the three files gpio-sim needs come out of the 140 MB source tarball.
            dpkg --fsys-tarfile "$deb" | tar -xOf - "./usr/src/linux-source-$series.tar.xz" \
                | tar -xJf - -C "$vmcache/gpio-sim" --strip-components=3 \
                    "linux-source-$series/drivers/gpio/gpio-sim.c" \
                    "linux-source-$series/drivers/gpio/gpiolib.h" \
                    "linux-source-$series/kernel/irq/irq_sim.c"
            ;;
        *) dpkg -x "$deb" "$tree" ;;
        esac
    done
    rm -rf "$vmcache/debs"

    # The uncompressed kernel, booted directly (PVH entry): decompressing the xz bzImage under
    # software emulation takes longer than the rest of the boot.
    local offset
    offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$tree/boot/vmlinuz-$abi" | head -n 1 | cut -d: -f1)
    [[ -n $offset ]] || die "no xz payload in vmlinuz-$abi"
    tail -c +$((offset + 1)) "$tree/boot/vmlinuz-$abi" | xz -dc >"$vmcache/vmlinux" 2>/dev/null || true
    [[ $(head -c 4 "$vmcache/vmlinux" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] \
        || die "could not unpack vmlinux from vmlinuz-$abi"

    # gpio-sim and irq_sim built as one out-of-tree module, gpio-sim.ko.
    local headers=$tree/usr/src/linux-headers-$abi src=$vmcache/gpio-sim
    sed -i "s#/usr/src/#$tree/usr/src/#" "$headers/Makefile" # it includes the -common tree
    mv "$src/gpio-sim.c" "$src/gpio-sim-core.c"
    sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' "$src/irq_sim.c"
    grep -q 'generic_handle_irq(irqnum)' "$src/irq_sim.c" \
        || die "irq_sim.c of $version no longer matches the irq_to_desc patch"
    printf 'obj-m := gpio-sim.o\ngpio-sim-y := gpio-sim-core.o irq_sim.o\n' >"$src/Kbuild"
    make -C "$headers" M="$src" modules >"$vmcache/gpio-sim-build.log" 2>&1 || {
        tail -n 20 "$vmcache/gpio-sim-build.log" >&2
        die "building gpio-sim against linux-headers-$abi failed (see $vmcache/gpio-sim-build.log)"
    }
    mkdir -p "$modroot/updates"
    cp "$src/gpio-sim.ko" "$modroot/updates/"
    "$busybox" depmod -b "$tree" "$abi"
    # modprobe & co. for the guest, used when this machine has no kmod.
    mkdir -p "$tree/sbin-busybox"
    local applet
    for applet in modprobe insmod rmmod lsmod modinfo; do ln -s ../bin/busybox "$tree/sbin-busybox/$applet"; done

    # The initramfs: busybox, the modules above, and init.
    local staging=$vmcache/initramfs
    rm -rf "$staging"
    mkdir -p "$staging/bin" "$staging/modules"
    cp "$busybox" "$staging/bin/busybox"
    cp "$here/initramfs-init.sh" "$staging/init"
    chmod 755 "$staging/init"
    local path
    : >"$staging/modules/load"
    while read -r path; do
        cp "$modroot/$path" "$staging/modules/"
        echo "${path##*/}" >>"$staging/modules/load"
    done < <(module_closure "${initramfs_modules[@]}")
    (cd "$staging" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$initramfs"
    rm -rf "$staging"
    echo "$abi $version $recipe" >"$stamp"
}

# The cache is remade when the kernel or the recipe (prepare, the initramfs' init) changes.
recipe=$( (declare -f prepare module_closure; cat "$here/initramfs-init.sh") | md5sum | cut -c1-12)
mkdir -p "$cache/vm"
exec 9>"$cache/vm/prepare.lock"
flock 9 # one preparation at a time; the others wait for it and then use its result
if [[ ! -f $stamp || $(cat "$stamp") != "$abi $version $recipe" ]]; then
    started=$SECONDS
    prepare
    say "kernel $abi ready after $((SECONDS - started)) s"
fi
exec 9>&-
[[ $prepare_only == 1 ]] && exit 0

# --- One run ----------------------------------------------------------------------------------
run=$(mktemp -d "${TMPDIR:-/tmp}/gattway-vm.XXXXXX")
qemu_pid=
cleanup() {
    local status=$?
    [[ -n $qemu_pid ]] && kill "$qemu_pid" 2>/dev/null
    if [[ $status -ne 0 && $status -ne $SKIP && -s $run/console.log && ! -f $run/status ]]; then
        echo "[vm] kernel console (last 40 lines):" >&2
        tail -n 40 "$run/console.log" >&2
    fi
    rm -rf "$run"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The script the guest runs inside the overlay root (as root, in a chroot).
{
    echo '#!/bin/bash'
    # busybox's module tools come first: the module index was made by busybox's depmod, and a
    # kmod modprobe from this machine's root (shared into the guest) cannot read it.
    printf 'export PATH=%q HOME=/root LANG=C.UTF-8 TERM=dumb\n' "$tree/sbin-busybox:$PATH"
    while IFS='=' read -r name _; do
        [[ $name == GATTWAY_* ]] && printf 'export %s=%q\n' "$name" "${!name}"
    done < <(env)
    for pair in "${extra_env[@]}"; do printf 'export %q\n' "$pair"; done
    printf 'export GATTWAY_VM_KERNEL=%q\n' "$abi"
    printf 'BUSYBOX=%q\n' "$busybox"
    printf 'GPIO_SIM=%q\n' "$gpio_sim"
    printf 'MODULES=('
    [[ ${#modules[@]} -gt 0 ]] && printf ' %q' "${modules[@]}"
    echo ')'
    cat "$here/guest-setup.sh"
    printf 'cd %q\n' "$PWD"
    printf 'exec'
    printf ' %q' "$@"
    echo
} >"$run/guest.sh"
chmod 755 "$run/guest.sh"
: >"$run/stdout"
: >"$run/stderr"

qemu=(
    qemu-system-x86_64 -machine pc,accel=tcg -cpu max -nodefaults -no-user-config
    -display none -no-reboot -m "${GATTWAY_VM_MEMORY:-1024}" -smp "${GATTWAY_VM_CPUS:-1}"
    -kernel "$vmcache/vmlinux" -initrd "$initramfs"
    -append "console=ttyS0 panic=-1 loglevel=4 no_timer_check gattway.run=$run gattway.abi=$abi"
    -serial "file:$run/console.log"
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$modroot,mount_tag=modules,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$run,mount_tag=run,security_model=none,multidevs=remap"
)
[[ -n $disk ]] && qemu+=(-drive "file=$disk,format=raw,if=virtio,cache=none")
[[ -n $pidfile ]] && qemu+=(-pidfile "$pidfile")
started=$SECONDS
timeout --signal=KILL "$timeout_s" "${qemu[@]}" &
qemu_pid=$!
tail -n +1 -f --pid="$qemu_pid" "$run/stdout" &
tail -n +1 -f --pid="$qemu_pid" "$run/stderr" >&2 &
wait "$qemu_pid" && qemu_status=0 || qemu_status=$?
qemu_pid=
wait # the tails finish once qemu is gone
[[ ${GATTWAY_VM_VERBOSE:-} == 1 ]] && cat "$run/console.log" >&2

if [[ ! -f $run/status ]]; then
    [[ $qemu_status -eq 137 ]] && die "the VM did not finish within ${timeout_s} s"
    die "the VM stopped without running the command (qemu exit $qemu_status)"
fi
status=$(cat "$run/status")
say "command exited $status; VM ran $((SECONDS - started)) s"
exit "$status"
