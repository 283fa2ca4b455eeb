# Sourced into guest.sh by run-in-vm.sh: runs inside the VM, before the command. Loads the
# requested modules and, with --gpio-sim, creates the simulated chip the tests drive.
vm_setup_failed() {
    echo "[vm] setup failed: $*" >&2
    exit 1
}

for module in "${MODULES[@]}"; do
    modprobe "$module" || vm_setup_failed "modprobe $module"
done

if [[ $GPIO_SIM == 1 ]]; then
    modprobe gpio-sim || vm_setup_failed "modprobe gpio-sim"
    grep -q ' /sys/kernel/config ' /proc/mounts \
        || mount -t configfs configfs /sys/kernel/config || vm_setup_failed "mount configfs"
    sim=/sys/kernel/config/gpio-sim/gattway
    mkdir "$sim" "$sim/bank0" || vm_setup_failed "mkdir $sim/bank0"
    echo gattway-sim >"$sim/bank0/label"
    echo 8 >"$sim/bank0/num_lines"
    for k in 0 1 2 3 4 5 6 7; do
        mkdir "$sim/bank0/line$k"
        echo "SIM$k" >"$sim/bank0/line$k/name"
    done
    echo 1 >"$sim/live" || vm_setup_failed "gpio-sim refused the chip"
    sim_chip=$(cat "$sim/bank0/chip_name")
    export GATTWAY_GPIOSIM_CHIP=/dev/$sim_chip
    export GATTWAY_GPIOSIM_SYSFS=/sys/devices/platform/$(cat "$sim/dev_name")/$sim_chip
    [[ -c $GATTWAY_GPIOSIM_CHIP ]] || vm_setup_failed "$GATTWAY_GPIOSIM_CHIP did not appear"
fi
unset -f vm_setup_failed
