#!/usr/bin/env bash
# Runs inside hci-user-channel-tests.sh's VM (root, hci_vhci loaded, GATTWAY_VHCI=1): the Swift
# suite UserChannelEndToEndTests from the prebuilt test bundle given as $1. Exit 0 only when at
# least one test ran and all passed.
set -uo pipefail
swift_tests=$1

# The phones reach the virtual controller over 127.0.0.1, and the VM's loopback starts down.
ip link set lo up 2>/dev/null || busybox ifconfig lo up

log=$(mktemp)
"$swift_tests" --testing-library swift-testing --filter UserChannelEndToEndTests >"$log" 2>&1
status=$?
grep -E "✘|✔|recorded an issue|Test run with|cannot open|opened the controller" "$log"
if [[ $status -eq 0 ]] && grep -qE "Test run with [1-9][0-9]* tests? .*passed" "$log"; then
    echo "UserChannelEndToEndTests ran and passed"
    exit 0
fi
echo "UserChannelEndToEndTests failed (exit $status); the test output and the virtual controller's log:"
tail -n 80 "$log"
for controller_log in /tmp/gattway-vc-*.log; do
    [[ -f $controller_log ]] && tail -n 40 "$controller_log"
done
exit 1
