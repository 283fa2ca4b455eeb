#!/usr/bin/env bash
# Every benchmark, kept out of the test suite (`make bench`):
#   1. GATT server micro-benchmarks (ordo-one benchmark, Tests/Benchmarks);
#   2. GPIO edge-to-callback latency (Tests/GPIOBenchmark);
#   3. write → echoed-notification round trip, gattway vs a Bumble GATT server on the Bumble
#      virtual link (Tests/RoundTripBenchmark);
#   4. CPU time, context switches and allocations per GPIO edge and per notification delivered,
#      the release-built `gattway` executable vs a Bumble peripheral, plus idle CPU and memory and
#      the stripped binary's size (Tests/EventCostBenchmark).
# 3 and 4 need Bumble: Python from GATTWAY_PYTHON, else .venv/bin/python3
# (deploy/dev/install-deps.sh creates it).
# Arguments go to the round-trip benchmark (e.g. --count 1000).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python=${GATTWAY_PYTHON:-$root/.venv/bin/python3}
if [[ ! -x $python ]]; then
    echo "run-benchmarks: no Python with Bumble at $python;" \
        "run deploy/dev/install-deps.sh or set GATTWAY_PYTHON" >&2
    exit 1
fi

echo "=== GATT server micro-benchmarks (Tests/Benchmarks)"
(cd Tests/Benchmarks && swift package benchmark)

echo
echo "=== GPIO benchmark (Tests/GPIOBenchmark)"
swift run -c release --package-path Tests/GPIOBenchmark

echo
echo "=== Write → notification round trip (Tests/RoundTripBenchmark)"
swift build -c release --package-path Tests/RoundTripBenchmark --product EchoPeripheral
bin=$(swift build -c release --package-path Tests/RoundTripBenchmark --show-bin-path)
"$python" Tests/RoundTripBenchmark/roundtrip.py --gattway "$bin/EchoPeripheral" "$@"

echo
echo "=== CPU per event (Tests/EventCostBenchmark)"
swift build -c release --product gattway
counter=$(mktemp -d)/malloc_counter.so
"${CC:-cc}" -O2 -shared -fPIC -o "$counter" Tests/EventCostBenchmark/malloc_counter.c -ldl -lpthread
"$python" Tests/EventCostBenchmark/event_cost.py --gattway "$(swift build -c release --show-bin-path)/gattway" \
    --malloc-counter "$counter"
