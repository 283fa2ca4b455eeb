#!/usr/bin/env bash
# The Raspberry Pi build, proven under emulation on this x86_64 machine:
#   1. Tests/deploy/deb-test.sh --arch arm64: the arm64 package cross-built from a fresh tree,
#      installed by the pi-gen stage's install step into a Debian 13 arm64 root under qemu-user,
#      with `gattway --version`, `gattway check` as the gattway user, the glibc symbol versions,
#      libgpiod 2.x, the unit, the udev rules, upgrade, remove and purge;
#   2. that package's own arm64 binary, run under qemu-aarch64 against Debian 13's libraries, in
#      the end-to-end tests: the virtual controller over TCP, Bumble phones that scan, connect,
#      discover, read (long values too), write every way, subscribe and get notifications and
#      indications, and a real mosquitto that sees values, subscribers, centrals and writes, and
#      whose /set reaches a phone (EndToEndTests: onePhoneDoesEverything and MQTTPhoneTests).
# What only a real Pi can show (its radio and UART, its GPIO header, its CPU's speed) is not
# here. Exit 0 pass, 1 fail, 77 skipped (reason printed).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }

[[ $(id -u) == 0 ]] || skip "needs root (debootstrap, chroot, mounts)"
[[ $(dpkg --print-architecture) == amd64 ]] || skip "cross-builds arm64 from amd64; this machine is $(dpkg --print-architecture)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
command -v qemu-aarch64-static >/dev/null || skip "qemu-user-static is not installed (apt-get install qemu-user-static binfmt-support)"

# The Debian 13 arm64 roots (made once, cached); this also registers qemu-aarch64 with
# binfmt_misc where it can, which the rest needs to run arm64 programs inside those roots.
if ! "$repo/deploy/cross/build-arm64.sh" --base >/dev/null; then
    grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
        || skip "this machine cannot run arm64 programs through binfmt_misc (no qemu-aarch64 entry with the F flag; mounting binfmt_misc is not allowed here?)"
    echo "FAIL - deploy/cross/build-arm64.sh could not make the Debian 13 arm64 roots"
    exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gattway-arm64.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS

echo "== the arm64 package in Debian 13 arm64 (Tests/deploy/deb-test.sh --arch arm64)"
GATTWAY_DEB_KEEP=$work/gattway_arm64.deb "$repo/Tests/deploy/deb-test.sh" --arch arm64
status=$?
((status == 77)) && exit 77
((status == 0)) || { echo "FAIL - the arm64 package test failed (exit $status)"; exit 1; }
[[ -f $work/gattway_arm64.deb ]] || { echo "FAIL - the arm64 package test kept no package"; exit 1; }

echo "== the package's arm64 binary end to end, under qemu-aarch64 (EndToEndTests)"
dpkg-deb -x "$work/gattway_arm64.deb" "$work/package"
sysroot=$("$repo/deploy/cross/build-arm64.sh" --sysroot) || { echo "FAIL - no arm64 sysroot"; exit 1; }
cat >"$work/gattway" <<WRAPPER
#!/bin/sh
exec qemu-aarch64-static -L "$sysroot" "$work/package/usr/bin/gattway" "\$@"
WRAPPER
chmod 0755 "$work/gattway"
echo "     $("$work/gattway" --version) ($(file -b "$work/package/usr/bin/gattway" | cut -d, -f1-2))"
cd "$repo"
swift build --build-tests >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; echo "FAIL - the test bundle does not build"; exit 1; }
GATTWAY_EXECUTABLE=$work/gattway swift test --skip-build \
    --filter 'ExecutableEndToEndTests/onePhoneDoesEverything|MQTTPhoneTests' 2>&1 | tee "$work/test.log" | grep -E '^(✔|✘)|passed|failed'
status=${PIPESTATUS[0]}
grep -q 'onePhoneDoesEverything() passed' "$work/test.log" && grep -q 'Suite MQTTPhoneTests passed' "$work/test.log" \
    || { echo "FAIL - the end-to-end tests did not all run and pass against the arm64 binary"; status=1; }
echo "== arm64 stage: $((SECONDS - started)) s"
exit $((status == 0 ? 0 : 1))
