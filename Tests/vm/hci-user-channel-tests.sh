#!/usr/bin/env bash
# The BLE host through the Linux HCI user channel for real: boots Debian's kernel with
# run-in-vm.sh and hci_vhci, where Tests/harness/virtual_controller.py --vhci attaches a Bumble
# controller to the kernel through /dev/vhci (the kernel registers it as hci0), and runs two
# Swift suites there:
#   UserChannelEndToEndTests  the host library in-process: it brings hci0 down, opens it through
#                             HCI_CHANNEL_USER, publishes and advertises, and a Bumble phone on
#                             the same virtual link scans, connects, discovers, reads, writes and
#                             gets notifications and indications;
#   ExecutableEndToEndTests   the same through the `gattway` executable (`gattway run --config F
#                             --hci hciN`, GATTWAY_E2E_TRANSPORT=vhci): one phone doing
#                             everything, four phones at once (max_centrals: 4; eight over TCP
#                             in `swift test`) with one killed mid prepared
#                             write, and the vhci controller detached and attached again (the
#                             kernel adapter disappears and reappears) under the running gattway.
#   UserChannelHeldElsewhereTests  another process holds hciN's user channel
#                             (Tests/harness/hold_user_channel.py): the kernel refuses gattway
#                             (EBUSY on HCIDEVDOWN), it says another program holds the adapter,
#                             runs degraded, and opens hciN once the holder exits.
#
# Python with Bumble: GATTWAY_PYTHON, else <repo>/.venv/bin/python3 (deploy/dev/install-deps.sh).
# The Swift test bundle and the gattway executable are built first when missing.
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
set -euo pipefail

readonly SKIP=77
started=$SECONDS
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

python=${GATTWAY_PYTHON:-$repo/.venv/bin/python3}
if [[ ! -x $python ]] || ! "$python" -c 'import bumble, cryptography' 2>/dev/null; then
    echo "[hci-user-channel] FAILED: $python with Bumble 0.0.236 is missing" \
        "(deploy/dev/install-deps.sh makes .venv, or set GATTWAY_PYTHON)"
    exit 1
fi
# The VM sees this machine's root, so the venv resolves to the same files there.
python=$(readlink -f "$(dirname "$python")")/$(basename "$python")

swift_tests=$repo/.build/debug/gattwayPackageTests.xctest
if [[ ! -x $swift_tests || ! -x $repo/.build/debug/gattway ]]; then
    echo "[hci-user-channel] building the Swift test bundle and gattway"
    (cd "$repo" && swift build --build-tests >/dev/null) || { echo "[hci-user-channel] FAILED: swift build"; exit 1; }
fi

# Nine Bumble processes, gattway and the test runner at once: more than the VM's default 1 GB.
export GATTWAY_VM_MEMORY=${GATTWAY_VM_MEMORY:-2048}
status=0
(cd "$repo" && "$here/run-in-vm.sh" --module hci_vhci --env GATTWAY_VHCI=1 --env GATTWAY_E2E_TRANSPORT=vhci \
    --env "GATTWAY_PYTHON=$python" -- \
    bash "$here/hci-user-channel-guest.sh" "$swift_tests") || status=$?
case $status in
0) echo "[hci-user-channel] PASSED in $((SECONDS - started)) s" ;;
"$SKIP") exit "$SKIP" ;;
*) echo "[hci-user-channel] FAILED (exit $status) after $((SECONDS - started)) s"; exit 1 ;;
esac
