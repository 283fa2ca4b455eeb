#!/usr/bin/env bash
# The short fuzz run of the test suite: builds the fuzz package and runs every target for
# FUZZ_SECONDS (default 20) seconds, starting from its committed seed corpus. Exit 0: no target
# found a crash, leak or timeout; 1: one did (its input is kept and printed); 77: skipped (the
# toolchain cannot build libFuzzer targets; the reason is printed).
set -uo pipefail
source "$(dirname "$0")/common.sh"

seconds=${FUZZ_SECONDS:-20}
work=$(mktemp -d)
trap 'rm -rf "$probe" "$work"' EXIT
failed=()
for name in "${FUZZ_TARGETS[@]}"; do
    echo "--- $name: $seconds s"
    if ! fuzz_target "$name" "$work/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048; then
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
