#!/usr/bin/env bash
# The short fuzz run of the test suite: builds the fuzz package and runs every target for
# FUZZ_SECONDS (default 20) seconds, starting from its committed seed corpus. Exit 0: no target
# found a crash, leak or timeout; 1: one did (its input is kept and printed); 77: skipped (the
# toolchain cannot build libFuzzer targets; the reason is printed).
set -uo pipefail
source "$(dirname "$0")/common.sh"

seconds=${FUZZ_SECONDS:-20}
# Targets run side by side, one per core (FUZZ_JOBS, default nproc): each still gets its own core
# for its FUZZ_SECONDS, and on CI's 2 cores the stage's fuzzing takes half the wall time.
parallel=${FUZZ_JOBS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$probe" "$work"' EXIT
run_target() {
    local name=$1
    fuzz_target "$name" "$work/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 >"$work/$name.out" 2>&1
    echo $? >"$work/$name.status"
}
for name in "${FUZZ_TARGETS[@]}"; do
    while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
    run_target "$name" &
done
wait
failed=()
for name in "${FUZZ_TARGETS[@]}"; do
    echo "--- $name: $seconds s"
    cat "$work/$name.out"
    if [[ $(cat "$work/$name.status" 2>/dev/null) != 0 ]]; then
        failed+=("$name")
        # Keep the finding beyond the temporary directory.
        keep="$FUZZ_DIR/.build/findings"
        mkdir -p "$keep" && cp -r "$work/$name-artifacts" "$keep/" && echo "findings kept in $keep/$name-artifacts"
    fi
done
if ((${#failed[@]})); then
    echo "fuzz targets with findings: ${failed[*]}"
    exit 1
fi
echo "fuzz: ${#FUZZ_TARGETS[@]} targets, no findings"
