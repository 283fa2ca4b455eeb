#!/usr/bin/env bash
# The long fuzz run (not part of the test suite): each target (or the ones named as arguments)
# runs for at least FUZZ_SECONDS (default 600) seconds AND at least FUZZ_RUNS (default 1,000,000)
# executions, continuing from its corpus in .build/fuzz-corpus/<target> (seeded from Corpus/).
# Prints executions and duration per target; exit 1 if any target found something (the input
# is kept in .build/fuzz-corpus/<target>-artifacts/).
set -uo pipefail
source "$(dirname "$0")/common.sh"

seconds=${FUZZ_SECONDS:-600}
runs=${FUZZ_RUNS:-1000000}
targets=("$@")
((${#targets[@]})) || targets=("${FUZZ_TARGETS[@]}")
corpora="$FUZZ_DIR/.build/fuzz-corpus"
failed=()
summary=()
for name in "${targets[@]}"; do
    echo "--- $name: at least $seconds s and $runs executions"
    start=$SECONDS total=0 status=0
    # Timed rounds until both bounds are met (a slow target needs more than one round).
    while ((SECONDS - start < seconds || total < runs)); do
        left=$((seconds - (SECONDS - start)))
        ((left < 60)) && left=60
        if ! fuzz_target "$name" "$corpora/$name" -max_total_time="$left" -timeout=10 -rss_limit_mb=2048; then
            status=1
            break
        fi
        total=$((total + $(executions "$corpora/$name.log")))
        echo "$name: $total executions so far, $((SECONDS - start)) s"
    done
    took=$((SECONDS - start))
    line="$name: $total executions in $took s, corpus $(ls "$corpora/$name" | wc -l) inputs"
    ((status)) && { line+=", FINDING"; failed+=("$name"); }
    echo "$line"
    summary+=("$line")
done
echo
printf '%s\n' "${summary[@]}"
if ((${#failed[@]})); then
    echo "fuzz targets with findings: ${failed[*]}"
    exit 1
fi
