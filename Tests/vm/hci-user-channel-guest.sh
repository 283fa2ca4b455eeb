#!/usr/bin/env bash
# Runs inside hci-user-channel-tests.sh's VM (root, hci_vhci loaded, GATTWAY_VHCI=1,
# GATTWAY_E2E_TRANSPORT=vhci): the Swift suites UserChannelEndToEndTests and
# ExecutableEndToEndTests, then UserChannelHeldElsewhereTests (a second process holds the user
# channel: gattway's explanation), from the prebuilt test bundle given as $1 (gattway
# sits beside it). Exit 0 only when every suite ran and passed.
set -uo pipefail
swift_tests=$1

# The phones reach the virtual controller over 127.0.0.1, and the VM's loopback starts down.
ip link set lo up 2>/dev/null || busybox ifconfig lo up

# A private temporary directory: the VM's /tmp shows the host's files beneath its overlay.
TMPDIR=$(mktemp -d /tmp/hci-user-channel.XXXXXX)
export TMPDIR

# One suite at a time: each attaches its own vhci controller, and the recovery test expects its
# reattached controller to get its adapter's index back, which another suite's adapter could take.
status=0
for suite in UserChannelEndToEndTests ExecutableEndToEndTests UserChannelHeldElsewhereTests; do
    log=$TMPDIR/$suite.log
    "$swift_tests" --testing-library swift-testing --filter "$suite" >"$log" 2>&1
    suite_status=$?
    grep -E "✘|✔|recorded an issue|Test run with|cannot open|opened the controller" "$log"
    if [[ $suite_status -eq 0 ]] && grep -q "Suite $suite passed" "$log"; then
        echo "$suite ran and passed"
        continue
    fi
    status=1
    echo "$suite failed (exit $suite_status); the test output:"
    tail -n 120 "$log"
done
# What gattway did when its adapter went away and came back (the recovery test's log).
grep -hE "lost the controller|cannot open the controller|opened the controller|controller (resetting|poweredOn|unsupported)" \
    "$TMPDIR"/gattway-test-e2e-*/gattway.log 2>/dev/null | sed 's/^/  gattway: /' | head -n 30
if [[ $status -ne 0 ]]; then
    echo "gattway's and the virtual controller's logs:"
    for file in "$TMPDIR"/gattway-test-e2e-*/gattway.log "$TMPDIR"/gattway-vc-*.log; do
        [[ -f $file ]] && { echo "== $file"; tail -n 60 "$file"; }
    done
fi
exit "$status"
