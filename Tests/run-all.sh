#!/usr/bin/env bash
# The whole test suite, stage by stage. A stage script exits 0 (passed), 77 (skipped: it prints
# why) or anything else (failed). Every stage runs even when an earlier one failed, so one run
# shows every failure; the exit status is non-zero if any stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
failures=() skips=()

stage() {
    local name=$1; shift
    echo
    echo "=== stage: $name"
    local start=$SECONDS
    "$@"
    local status=$?
    local took=$((SECONDS - start))
    case $status in
        0) passed=$((passed + 1)); echo "=== $name: passed (${took}s)" ;;
        77) skipped=$((skipped + 1)); skips+=("$name"); echo "=== $name: SKIPPED (${took}s)" ;;
        *) failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAILED with status $status (${took}s)" ;;
    esac
}

stage "swift unit and integration tests" swift test
for script in Tests/userland/debian13.sh Tests/vm/gpio-sim-tests.sh Tests/vm/hci-user-channel-tests.sh \
              Tests/Fuzz/run-short.sh Tests/deploy/deb-test.sh Tests/deploy/vm-test.sh; do
    [[ -x $script ]] && stage "$script" "$script"
done

echo
((${#skips[@]})) && echo "skipped stages: ${skips[*]}"
((${#failures[@]})) && echo "failed stages: ${failures[*]}"
echo "stages: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
