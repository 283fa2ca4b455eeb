#!/usr/bin/env bash
# The whole test suite, stage by stage. A stage script exits 0 (passed), 77 (skipped: it prints
# why) or anything else (failed). Every stage runs even when an earlier one failed, so one run
# shows every failure; the exit status is non-zero if any stage failed.
#
# Where every stage can run (CI=true, as CI sets it, or GATTWAY_REQUIRE_ALL_STAGES=1), a skipped
# stage fails the run too, unless its script is named in GATTWAY_ALLOW_SKIP (space-separated):
# a stage that quietly stopped running must not look like a pass.
set -uo pipefail
cd "$(dirname "$0")/.."
require_all=false
[[ ${CI:-} == true || ${GATTWAY_REQUIRE_ALL_STAGES:-} == 1 ]] && require_all=true

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
        77)
            if $require_all && [[ " ${GATTWAY_ALLOW_SKIP:-} " != *" $name "* ]]; then
                failed=$((failed + 1)); failures+=("$name")
                echo "=== $name: SKIPPED, which fails here: every stage must run (CI=true or GATTWAY_REQUIRE_ALL_STAGES=1; GATTWAY_ALLOW_SKIP names exceptions) (${took}s)"
            else
                skipped=$((skipped + 1)); skips+=("$name"); echo "=== $name: SKIPPED (${took}s)"
            fi ;;
        *) failed=$((failed + 1)); failures+=("$name"); echo "=== $name: FAILED with status $status (${took}s)" ;;
    esac
}

# The swift test output is kept so that the summary at the very end (all a CI tail shows) can
# name the tests that failed. The tests' files (configs, state directories, logs of the processes
# they start) go to a scratch TMPDIR, removed when every test passed and kept for a look otherwise.
swift_test_log=$(mktemp)
trap 'rm -f "$swift_test_log" "${GATTWAY_IMAGE_ROOTS_LOG:-}"' EXIT
swift_test() {
    local scratch status watchdog
    scratch=$(mktemp -d -t gattway-swift-test.XXXXXX)
    stall_watchdog "$swift_test_log" &
    watchdog=$!
    # Line-buffered (stdbuf reaches the test process through the environment), so the log is
    # current when the watchdog reads it.
    TMPDIR=$scratch stdbuf -oL -eL swift test 2>&1 | tee "$swift_test_log"
    status=${PIPESTATUS[0]}
    kill "$watchdog" 2>/dev/null
    if ((status == 0)); then rm -rf "$scratch"; else echo "the tests' files are kept in $scratch"; fi
    return "$status"
}

# A whole `swift test` run takes about two minutes and prints as it goes. A log that stops growing
# for ten minutes is a hang: the tests that started and never ended are named (and the test
# process's threads shown, when gdb is there), then the process is killed, so the stage fails
# saying where it stood instead of using up CI's time.
# The names of the tests and suites a swift-testing log shows starting, and ending (the whole run's
# line, a parameterized test's cases and the issues a test records are left out).
tests_started() {
    grep -vE '◇ Test (case |run started)' "$1" | sed -nE 's/.*◇ (Test|Suite) (.*) started\.$/\2/p' | sort -u
}
tests_ended() {
    grep -vE '(✔|✘) Test case ' "$1" | sed -nE 's/.*(✔|✘) (Test|Suite) (.*) (passed|failed) after .*/\3/p' |
        sed -E 's/ with [0-9]+ test cases?$//' | sort -u
}

stall_watchdog() {
    local log=$1 size last=-1 still=0 pid
    while sleep 30; do
        size=$(stat -c %s "$log" 2>/dev/null || echo 0)
        if ((size == last)); then still=$((still + 30)); else still=0 last=$size; fi
        ((still < 600)) && continue
        echo "=== swift test printed nothing for 10 minutes; started and not ended:"
        comm -23 <(tests_started "$log") <(tests_ended "$log") | sed 's/^/  /'
        for pid in $(pgrep -f 'PackageTests\.xctest'); do
            if command -v gdb >/dev/null; then
                gdb -p "$pid" -batch -ex 'thread apply all bt 20' 2>/dev/null | grep -E '^(Thread|#)' | cut -c1-240
            fi
            kill -9 "$pid"
        done
        return
    done
}

stage "lint (swift format, .swift-format)" make --no-print-directory lint
stage "swift unit and integration tests" swift_test
[[ -x Tests/userland/debian13.sh ]] && stage Tests/userland/debian13.sh Tests/userland/debian13.sh

# The Raspberry Pi image stage needs two Debian arm64 roots that take longer to make the first
# time than any stage's own work (debootstrap and apt under qemu-user, then the initramfs; cached
# after that). They are made in the background from here on, at the lowest CPU and I/O priority,
# beside the stages that leave a core idle (each VM runs one virtual CPU) or run for a fixed time
# (fuzzing), and not beside the Swift test runs above: beside `swift test` they slowed two of its
# timed tests past their bounds. The image stage waits for them (deploy/build-raspi-image.sh's lock) and shows this log.
if [[ -x Tests/deploy/image-test.sh && $(id -u) == 0 && $(dpkg --print-architecture) == amd64 ]]; then
    export GATTWAY_IMAGE_ROOTS_LOG
    GATTWAY_IMAGE_ROOTS_LOG=$(mktemp -t gattway-image-roots.XXXXXX)
    nice -n 19 ionice -c 3 deploy/build-raspi-image.sh --prepare >"$GATTWAY_IMAGE_ROOTS_LOG" 2>&1 &
fi
for script in Tests/userland/home-assistant.sh Tests/vm/gpio-sim-tests.sh Tests/vm/power-cut-tests.sh Tests/vm/hci-user-channel-tests.sh Tests/vm/bluez-central-tests.sh \
              Tests/Fuzz/run-short.sh Tests/deploy/deb-test.sh Tests/deploy/arm64-test.sh Tests/deploy/image-test.sh Tests/deploy/vm-test.sh; do
    [[ -x $script ]] && stage "$script" "$script"
done

echo
if ((${#failures[@]})); then
    echo "failed stages: ${failures[*]}"
    grep -E '✘|error: ' "$swift_test_log" | cut -c1-300 | head -n 15 | sed 's/^/  swift test: /'
fi
# The last line counts the stages and names the skipped ones, so a log's tail shows what did not run.
echo "stages: $passed passed, $failed failed, $skipped skipped${skips[*]:+ (${skips[*]})}"
((failed == 0))
