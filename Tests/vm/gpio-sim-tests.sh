#!/usr/bin/env bash
# Kernel-level GPIO tests: boots Debian's kernel with run-in-vm.sh, creates the gpio-sim chip
# `gattway-sim` (lines SIM0..SIM7) and three Raspberry Pi-like chips (pinctrl-bcm2835 with
# Raspberry Pi OS's names, pinctrl-bcm2711 with the mainline tree's, pinctrl-rp1 unnamed), and
# checks them with libgpiod's own tools (gpiodetect, gpioinfo, gpioget, gpiomon) and with the
# shim's C test (Tests/vm/shim-test.c) built against libgpiod 1.6 (this machine) and, when
# Debian 13's root is cached (Tests/userland/debian13.sh made it),
# against libgpiod 2.x too; gattway's libgpiod backend suites run on 1.6 (this machine's test
# bundle) and, when Tests/userland/debian13.sh has built a test bundle newer than the GPIO sources,
# on libgpiod 2.x too (that bundle, in the Debian 13 root). Also checks that hci_vhci loads
# (/dev/vhci) for the BLE tests.
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -euo pipefail

readonly SKIP=77
skip() { echo "[gpio-sim] SKIPPED: $*"; exit "$SKIP"; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}
d13root=$cache/debian13-root
d13build=$cache/debian13-build
started=$SECONDS

command -v gcc >/dev/null || skip "gcc is not installed"
pkg-config --exists libgpiod || skip "libgpiod-dev is not installed"
for tool in gpiodetect gpioinfo gpioget gpiomon; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed (apt-get install gpiod)"
done

# The test binaries live in the cache (visible inside the VM through the shared root).
work=$cache/gpio-sim-tests
rm -rf "$work"
mkdir -p "$work"
shim=(Sources/CGPIODShim/gpiod_shim.c Tests/vm/shim-test.c)
(cd "$repo" && gcc -std=gnu11 -O1 -Wall -Wextra -Werror -I Sources/CGPIODShim/include "${shim[@]}" \
    $(pkg-config --cflags --libs libgpiod) -o "$work/shim-test-v1")
v2_binary= v2_build=
exec 9>"$cache/debian13.lock"
flock 9 # Tests/userland/debian13.sh may be (re)making the root right now
if [[ -f $d13root/.gattway-root-complete ]]; then
    v2_dir=/var/tmp/gattway-shim-test
    rm -rf "${d13root:?}$v2_dir"
    mkdir -p "$d13root$v2_dir"
    (cd "$repo" && cp -r Sources/CGPIODShim/include "${shim[@]}" "$d13root$v2_dir/")
    chroot "$d13root" /bin/sh -c "cd $v2_dir && gcc -std=gnu11 -O1 -Wall -Wextra -Werror \
        -I include gpiod_shim.c shim-test.c \$(pkg-config --cflags --libs libgpiod) -o shim-test-v2"
    v2_binary=$v2_dir/shim-test-v2
    # debian13.sh's bundle, if it was built after the last change to the GPIO layer here.
    bundle=$d13build/debug/gattwayPackageTests.xctest
    newer=$(cd "$repo" && find Sources/CGPIODShim Sources/GPIO Sources/GPIOLibgpiod Sources/Sensors Tests/GPIOTests Tests/GPIOLibgpiodTests Tests/SensorsTests \
        -newer "$bundle" -print -quit 2>/dev/null || echo missing)
    if [[ -x $bundle && -z $newer ]]; then
        v2_build=$d13build
        echo "[gpio-sim] the Swift suites also run on libgpiod 2.x: Debian 13 test bundle built" \
            "$(date -r "$bundle" '+%F %T') by Tests/userland/debian13.sh"
    else
        echo "[gpio-sim] note: the Swift suites run against libgpiod 1.6 only: no Debian 13 test bundle" \
            "newer than the GPIO sources (Tests/userland/debian13.sh builds it)"
    fi
else
    echo "[gpio-sim] note: no cached Debian 13 root, so the shim runs against libgpiod 1.6 only" \
        "(Tests/userland/debian13.sh makes the root)"
fi
exec 9>&-

# gattway's own test bundle, built on this machine, runs inside the VM through the shared root.
swift_tests=$repo/.build/debug/gattwayPackageTests.xctest
if [[ ! -x $swift_tests || ! -x $repo/.build/debug/gattway ]]; then
    echo "[gpio-sim] building the Swift test bundle"
    (cd "$repo" && swift build --build-tests >/dev/null) || { echo "[gpio-sim] FAILED: swift build"; exit 1; }
fi

status=0
"$here/run-in-vm.sh" --gpio-sim --module hci_vhci -- \
    bash "$here/gpio-sim-guest.sh" "$work/shim-test-v1" "$d13root" "$v2_binary" "$swift_tests" \
    "$v2_build" "$repo/.build/debug/gattway" || status=$?
case $status in
0) echo "[gpio-sim] PASSED in $((SECONDS - started)) s" ;;
"$SKIP") exit "$SKIP" ;;
*) echo "[gpio-sim] FAILED (exit $status) after $((SECONDS - started)) s"; exit 1 ;;
esac
