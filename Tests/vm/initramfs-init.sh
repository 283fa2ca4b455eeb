#!/bin/busybox sh
# PID 1 of run-in-vm.sh's initramfs. Loads the 9p/virtio/overlay modules, mounts this machine's
# root (9p, read-only) under a tmpfs overlay, the kernel's modules and the run directory (both
# 9p), runs the run directory's guest.sh in that root, stores its exit status, and powers off.
/bin/busybox mkdir -p /proc /sys /dev /sbin /usr/bin /usr/sbin /lower /upper /newroot
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
    echo "initramfs: $*"
    poweroff -f
}

for module in $(cat /modules/load); do
    insmod "/modules/$module" || fail "insmod $module failed"
done

run=
abi=
for arg in $(cat /proc/cmdline); do
    case $arg in
    gattway.run=*) run=${arg#*=} ;;
    gattway.abi=*) abi=${arg#*=} ;;
    esac
done
[ -n "$run" ] && [ -n "$abi" ] || fail "gattway.run= and gattway.abi= missing on the command line"

p9="trans=virtio,version=9p2000.L,msize=512000"
# The root does not change while the VM runs: let the guest cache it (much faster under TCG).
mount -t 9p -o "$p9,ro,cache=loose" hostroot /lower || fail "cannot mount the host root"
mount -t tmpfs -o size=75% tmpfs /upper || fail "cannot mount the overlay's tmpfs"
mkdir -p /upper/data /upper/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work /newroot \
    || fail "cannot mount the overlay"
mkdir -p "/newroot$run" "/newroot/lib/modules/$abi"
mount -t 9p -o "$p9" run "/newroot$run" || fail "cannot mount the run directory"
mount -t 9p -o "$p9,ro" modules "/newroot/lib/modules/$abi" || fail "cannot mount the modules"
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs tmpfs /newroot/run
ip link set lo up

chroot /newroot /bin/bash "$run/guest.sh" </dev/null >"/newroot$run/stdout" 2>"/newroot$run/stderr"
echo $? >"/newroot$run/status"
sync
poweroff -f
