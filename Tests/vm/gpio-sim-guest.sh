#!/usr/bin/env bash
# Runs inside the VM (see gpio-sim-tests.sh):
# usage gpio-sim-guest.sh SHIM_TEST_V1 [D13_ROOT V2_BINARY [SWIFT_TEST_BUNDLE [D13_BUILD_DIR [GATTWAY]]]]
set -uo pipefail
shim_v1=$1 d13root=${2:-} shim_v2=${3:-} swift_tests=${4:-} d13build=${5:-} gattway=${6:-}
chip=${GATTWAY_GPIOSIM_CHIP##*/}
failures=0
check() { # check DESCRIPTION COMMAND...
    local description=$1
    shift
    if "$@"; then echo "  ok   $description"; else echo "  FAIL $description"; failures=$((failures + 1)); fi
}
pull() { echo "$2" >"$GATTWAY_GPIOSIM_SYSFS/sim_gpio$1/pull"; }
has() { grep -q -- "$2" <<<"$1"; }

echo "kernel $(uname -r); gpio-sim chip $GATTWAY_GPIOSIM_CHIP ($GATTWAY_GPIOSIM_SYSFS)"
echo "libgpiod tools"
detect=$(gpiodetect)
check "gpiodetect lists $chip [gattway-sim] (8 lines)" has "$detect" "$chip \[gattway-sim\] (8 lines)"
for pi_chip in "pinctrl-bcm2835\] (54" "pinctrl-bcm2711\] (58" "pinctrl-rp1\] (54"; do
    check "gpiodetect lists a Pi-like chip [${pi_chip%%\\*}]" has "$detect" "\[$pi_chip lines)"
done
info=$(gpioinfo "$chip")
check "gpioinfo names SIM0..SIM7" \
    bash -c 'for k in 0 1 2 3 4 5 6 7; do grep -q "line *$k: *\"SIM$k\"" <<<"$1" || exit 1; done' _ "$info"
pull 6 pull-up
check "gpioget reads 1 on a line driven high" test "$(gpioget "$chip" 6)" = 1
pull 6 pull-down
check "gpioget reads 0 on a line driven low" test "$(gpioget "$chip" 6)" = 0
check "gpioget --bias=pull-up on an undriven line reads 1" \
    test "$(gpioget --bias=pull-up "$chip" 7)" = 1
pull 7 pull-down
monitor_output=$(mktemp)
gpiomon --num-events=1 --rising-edge "$chip" 7 >"$monitor_output" &
monitor=$!
for _ in $(seq 100); do gpioinfo "$chip" | grep -q 'line *7:.*"gpiomon"' && break; sleep 0.1; done
pull 7 pull-up
for _ in $(seq 100); do kill -0 "$monitor" 2>/dev/null || break; sleep 0.1; done
kill "$monitor" 2>/dev/null
check "gpiomon sees the rising edge with a timestamp" \
    grep -qE 'event: +RISING EDGE offset: 7 timestamp: \[ *[0-9]+\.[0-9]+\]' "$monitor_output"
cat "$monitor_output"

echo "hci_vhci"
check "/dev/vhci exists after loading hci_vhci" test -c /dev/vhci

echo "shim on libgpiod 1.6"
check "shim test (libgpiod 1.6) passes" "$shim_v1"
if [[ -n $shim_v2 ]]; then
    echo "shim on libgpiod 2.x (Debian 13 root)"
    for fs in dev sys proc; do mount --bind "/$fs" "$d13root/$fs"; done
    check "shim test (libgpiod 2.x) passes" chroot "$d13root" "$shim_v2"
    for fs in dev sys proc; do umount "$d13root/$fs"; done
fi

# gattway's own GPIO layer (module GPIO, libgpiod backend) and sensors on the same chip; these
# suites are enabled only where GATTWAY_GPIOSIM_CHIP is set, i.e. here.
swift_suites() { # swift_suites DESCRIPTION COMMAND...
    local description=$1 swift_log
    shift
    swift_log=$(mktemp)
    "$@" --testing-library swift-testing --filter "LibgpiodBackendTests|LibgpiodSensorTests|LibgpiodRaspberryPiNameTests|LibgpiodBoardTests" >"$swift_log" 2>&1
    local swift_status=$?
    grep -E "✘|recorded an issue|skipped|Test run with" "$swift_log"
    # A suite skipped here (its VM fixture missing) counts as passed in the summary: refused.
    check "$description" \
        bash -c '[[ $1 -eq 0 ]] && grep -qE "Test run with [1-9][0-9]* tests? .*passed" "$2" && ! grep -q "skipped" "$2"' \
        _ "$swift_status" "$swift_log"
}
if [[ -n $swift_tests ]]; then
    echo "gattway's libgpiod backend on libgpiod 1.6 (Swift suites)"
    swift_suites "Swift libgpiod backend suites ran and passed (libgpiod 1.6)" "$swift_tests"
fi
if [[ -n $d13build ]]; then
    # The bundle Tests/userland/debian13.sh built, run in the Debian 13 root with the toolchain's
    # runtime where it was built (/opt/swift, its RUNPATH) and its build directory where
    # debian13.sh mounts it.
    echo "gattway's libgpiod backend on libgpiod 2.x (Swift suites, Debian 13 root)"
    for fs in dev sys proc; do mount --bind "/$fs" "$d13root/$fs"; done
    mkdir -p "$d13root/opt/swift" "$d13root/tmp/build-d13"
    mount --bind /opt/swift "$d13root/opt/swift"
    mount --bind "$d13build" "$d13root/tmp/build-d13"
    swift_suites "Swift libgpiod backend suites ran and passed (libgpiod 2.x)" \
        chroot "$d13root" /tmp/build-d13/debug/gattwayPackageTests.xctest
    for fs in dev sys proc opt/swift tmp/build-d13; do umount "$d13root/$fs"; done
fi

# A reload is all or nothing on real chips too: the gattway executable (libgpiod backend) runs a
# binary sensor on SIM3; a reload to a line name no chip has (a typo `check` cannot see) fails
# naming it, and the sensor keeps following SIM3 as before.
if [[ -n $gattway ]]; then
    echo "gattway reload with a missing line name (libgpiod)"
    reload_dir=$(mktemp -d)
    reload_config() { # reload_config LINE
        cat >"$reload_dir/gattway.yaml" <<EOF
device: {name: reload sim, id: reload-sim}
bluetooth: {transport: "tcp:127.0.0.1:9"}
state_dir: $reload_dir/state
runtime_dir: $reload_dir/run
gpio: {backend: libgpiod}
sensors:
  - {id: door, kind: binary, line: $1}
services:
  - uuid: 7c2b0000-8f5e-4d3c-9b1a-5d0e0c0ffee0
    name: gpio
    characteristics:
      - {uuid: 7c2b0001-8f5e-4d3c-9b1a-5d0e0c0ffee0, name: open, format: bool, source: {sensor: door}}
EOF
    }
    door_shows() { # door_shows VALUE: within 20 s, `gattway status` shows the door's VALUE
        local _
        for _ in $(seq 100); do
            "$gattway" status --config "$reload_dir/gattway.yaml" 2>/dev/null | grep -q "^  door: gpio/open = $1\$" && return 0
            sleep 0.2
        done
        "$gattway" status --config "$reload_dir/gattway.yaml" 2>&1 | sed 's/^/    /'
        tail -n 20 "$reload_dir/gattway.log" | sed 's/^/    log: /'
        return 1
    }
    reload_config SIM3
    pull 3 pull-down
    "$gattway" run --config "$reload_dir/gattway.yaml" >"$reload_dir/gattway.log" 2>&1 &
    gattway_pid=$!
    check "gattway runs the door on SIM3 (status shows false)" door_shows false
    reload_config SIM33
    reload_output=$("$gattway" reload --config "$reload_dir/gattway.yaml" 2>&1)
    reload_status=$?
    echo "$reload_output" | sed 's/^/    /'
    check "gattway reload to the missing line SIM33 exits 1" test "$reload_status" -eq 1
    check "gattway reload reports failed: naming SIM33, and that the sensor runs as before" \
        bash -c 'grep -q "failed: sensor door could not start: .*SIM33" <<<"$1" && grep -q "it runs as before" <<<"$1"' _ "$reload_output"
    pull 3 pull-up
    check "after the failed reload the door still follows SIM3 (pulled up: true)" door_shows true
    pull 3 pull-down
    check "and back (pulled down: false)" door_shows false
    kill "$gattway_pid" 2>/dev/null
    wait "$gattway_pid"
    stop_status=$?
    check "gattway stops cleanly after it (exit 0)" test "$stop_status" -eq 0
    unset -f reload_config door_shows
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
