# Sourced into guest.sh by run-in-vm.sh: runs inside the VM, before the command. Loads the
# requested modules and, with --gpio-sim, creates the simulated chips the tests drive.
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
    # sim_chip DIR LABEL LINES [NAME...]: a live gpio-sim chip of one bank, whose label is the
    # chip's label; an empty NAME leaves its line unnamed. Prints /dev/gpiochipN:SYSFS-DIR.
    sim_chip() {
        local dir=/sys/kernel/config/gpio-sim/$1 label=$2 count=$3 k=0 name chip
        shift 3
        mkdir "$dir" "$dir/bank0" || vm_setup_failed "mkdir $dir/bank0"
        echo "$label" >"$dir/bank0/label"
        echo "$count" >"$dir/bank0/num_lines"
        for name in "$@"; do
            if [[ -n $name ]]; then
                mkdir "$dir/bank0/line$k"
                echo "$name" >"$dir/bank0/line$k/name"
            fi
            k=$((k + 1))
        done
        echo 1 >"$dir/live" || vm_setup_failed "gpio-sim refused chip $1"
        chip=$(cat "$dir/bank0/chip_name")
        [[ -c /dev/$chip ]] || vm_setup_failed "/dev/$chip did not appear"
        echo "/dev/$chip:/sys/devices/platform/$(cat "$dir/dev_name")/$chip"
    }
    sim=$(sim_chip gattway gattway-sim 8 SIM0 SIM1 SIM2 SIM3 SIM4 SIM5 SIM6 SIM7) || exit 1
    export GATTWAY_GPIOSIM_CHIP=${sim%%:*}
    export GATTWAY_GPIOSIM_SYSFS=${sim#*:}
    # A Raspberry Pi's pin controller as each kernel shows it: Raspberry Pi OS's tree names the
    # lines GPIO0..GPIO53; the mainline tree (Debian's kernel) names the header's after their
    # function where it has one and leaves the Pi 4's others unnamed; and one left unnamed, as
    # the Pi 5's RP1 with a tree that names nothing.
    raspberry_pi_os=$(sim_chip raspberry-pi-os pinctrl-bcm2835 54 $(printf 'GPIO%d ' $(seq 0 53))) || exit 1
    mainline=$(sim_chip mainline pinctrl-bcm2711 58 ID_SDA ID_SCL SDA1 SCL1 GPIO_GCLK GPIO5 GPIO6 \
        SPI_CE1_N SPI_CE0_N SPI_MISO SPI_MOSI SPI_SCLK GPIO12 GPIO13 TXD1 RXD1 GPIO16 GPIO17 GPIO18 \
        GPIO19 GPIO20 GPIO21 GPIO22 GPIO23 GPIO24 GPIO25 GPIO26 GPIO27) || exit 1
    unnamed=$(sim_chip unnamed pinctrl-rp1 54) || exit 1
    export GATTWAY_GPIOSIM_PI_CHIPS="raspberry-pi-os=$raspberry_pi_os mainline=$mainline unnamed=$unnamed"
    unset -f sim_chip
fi
unset -f vm_setup_failed
