#!/usr/bin/env bash
# BlueZ as the central, the stack Linux and Home Assistant use: boots Debian's kernel with
# run-in-vm.sh and hci_vhci; in the VM, Tests/harness/virtual_controller.py attaches two Bumble
# controllers to the kernel through /dev/vhci (the kernel's hci0 and hci1, two phones, run by
# bluetoothd on a system D-Bus) and serves another on the same virtual link over a Unix socket,
# where the `gattway` executable runs (`gattway run --hci unix:PATH`). Tests/vm/bluez_central.py,
# with bleak, then scans, connects, discovers, reads, subscribes, writes; with the pairing window
# closed is refused a relay (an output on a simulated line) that needs a bonded link and pairing
# (BlueZ's own on the write, and bleak's pair()); pairs Just Works with pair() in a window opened by
# `gattway pair`, drives the relay; after `gattway pair --close` a second phone's pair() is
# refused; reconnects bonded; and checks BlueZ's attribute cache across gattway restarts with a
# changed and an unchanged layout, each read against its characteristic's own value (see
# bluez-central-guest.sh and docs/testing.md).
#
# Needs root, qemu (run-in-vm.sh), bluez (bluetoothd, btmon) and dbus-daemon on this machine, whose
# root the VM shares, and bleak in the venv (deploy/dev/install-deps.sh --test installs them).
# Python: GATTWAY_PYTHON, else <repo>/.venv/bin/python3. gattway is built first when missing.
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -euo pipefail

readonly SKIP=77
started=$SECONDS
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
skip() { echo "[bluez-central] SKIPPED: $*"; exit "$SKIP"; }

for tool in /usr/libexec/bluetooth/bluetoothd btmon dbus-daemon; do
    [[ -x $tool ]] || command -v "$tool" >/dev/null \
        || skip "$tool is not installed (apt-get install bluez dbus, or deploy/dev/install-deps.sh --test)"
done
python=${GATTWAY_PYTHON:-$repo/.venv/bin/python3}
if [[ ! -x $python ]] || ! "$python" -c 'import bumble, cryptography, bleak, dbus_fast' 2>/dev/null; then
    echo "[bluez-central] FAILED: $python with Bumble and bleak is missing" \
        "(deploy/dev/install-deps.sh --test makes .venv, or set GATTWAY_PYTHON)"
    exit 1
fi
# The VM sees this machine's root, so the venv resolves to the same files there.
python=$(readlink -f "$(dirname "$python")")/$(basename "$python")

gattway=$repo/.build/debug/gattway
if [[ ! -x $gattway ]]; then
    echo "[bluez-central] building gattway"
    (cd "$repo" && swift build --product gattway >/dev/null) || { echo "[bluez-central] FAILED: swift build"; exit 1; }
fi

# SMP's crypto (AES-CMAC, and the DRBG that P-256 ECDH draws its keys from) is in modules the
# kernel would load on demand, but its module helper cannot read the index of the VM's busybox
# modprobe: without them the kernel logs "Unable to create CMAC crypto context" and refuses to pair.
crypto_modules=(--module cmac --module ecb --module drbg)
status=0
(cd "$repo" && "$here/run-in-vm.sh" "${crypto_modules[@]}" --module hci_vhci --timeout 900 --env "GATTWAY_PYTHON=$python" -- \
    bash "$here/bluez-central-guest.sh" "$gattway") || status=$?
case $status in
0) echo "[bluez-central] PASSED in $((SECONDS - started)) s" ;;
"$SKIP") exit "$SKIP" ;;
*) echo "[bluez-central] FAILED (exit $status) after $((SECONDS - started)) s"; exit 1 ;;
esac
