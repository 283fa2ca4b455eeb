#!/usr/bin/env bash
# Every benchmark, kept out of the test suite (`make bench`). The Swift ones are targets of one
# package, Tests/Benchmarks, so the root package is built once for them (and once, in release, for
# the `gattway` executable the CPU-per-event benchmark runs):
#   1. GATT server micro-benchmarks (ordo-one benchmark, target GATTBenchmarks);
#   2. GPIO edges through the sensor path (target GPIOBenchmark);
#   3. write → echoed-notification round trip, gattway (target EchoPeripheral) vs a Bumble GATT
#      server on the Bumble virtual link (roundtrip.py);
#   4. CPU time, context switches and allocations per GPIO edge, per notification delivered and
#      per value published over MQTT, the release-built `gattway` executable vs a Bumble peripheral,
#      a BTstack one and `mosquitto_pub`, plus idle CPU and memory and the stripped binary's size,
#      beside the machine's floor: what a bare wake-up, and a notification's system calls alone,
#      cost a C program (event_cost.py, wake_floor.c); then, with valgrind installed, the
#      instructions per event of each (callgrind).
# 3 and 4 need Bumble: Python from GATTWAY_PYTHON, else .venv/bin/python3
# (deploy/dev/install-deps.sh creates it). The BTstack peer is built from a BTstack source tree at
# v1.8.2 given in BTSTACK_SRC (Tests/Benchmarks/btstack/build-btstack-notifier.sh); without it
# the run has no BTstack figures and says so.
# Arguments go to the round-trip benchmark (e.g. --count 1000).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
benchmarks=Tests/Benchmarks
python=${GATTWAY_PYTHON:-$root/.venv/bin/python3}
if [[ ! -x $python ]]; then
    echo "run-benchmarks: no Python with Bumble at $python;" \
        "run deploy/dev/install-deps.sh or set GATTWAY_PYTHON" >&2
    exit 1
fi

echo "=== GATT server micro-benchmarks (GATTBenchmarks)"
(cd "$benchmarks" && swift package benchmark --target GATTBenchmarks)

echo
echo "=== GPIO benchmark (GPIOBenchmark)"
swift run -c release --package-path "$benchmarks" GPIOBenchmark

echo
echo "=== Write → notification round trip (EchoPeripheral, roundtrip.py)"
swift build -c release --package-path "$benchmarks" --product EchoPeripheral
bin=$(swift build -c release --package-path "$benchmarks" --show-bin-path)
"$python" "$benchmarks/roundtrip.py" --gattway "$bin/EchoPeripheral" "$@"

echo
echo "=== CPU per event (event_cost.py)"
# The executable as the package ships it (Swift's libraries linked in), so the binary size and
# memory are the shipped ones; its own scratch path keeps the other release build's flags apart.
shipped=(-c release --static-swift-stdlib --scratch-path .build/shipped)
swift build "${shipped[@]}" --product gattway
helpers=$(mktemp -d)
"${CC:-cc}" -O2 -shared -fPIC -o "$helpers/malloc_counter.so" "$benchmarks/malloc_counter.c" -ldl -lpthread
"${CC:-cc}" -O2 -o "$helpers/wake_floor" "$benchmarks/wake_floor.c"
peers=()
if [[ -n ${BTSTACK_SRC:-} ]]; then
    "$benchmarks/btstack/build-btstack-notifier.sh" "$helpers"
    peers+=(--btstack "$helpers/btstack_notifier" --rounds 5)
else
    echo "run-benchmarks: BTSTACK_SRC not set: no BTstack peer in this run (set it to a BTstack" \
        "source tree at v1.8.2; see Tests/Benchmarks/btstack/build-btstack-notifier.sh)" >&2
fi
if command -v valgrind >/dev/null; then
    peers+=(--callgrind)
else
    echo "run-benchmarks: no valgrind: instructions per event not counted" >&2
fi
"$python" "$benchmarks/event_cost.py" --gattway "$(swift build "${shipped[@]}" --show-bin-path)/gattway" \
    --malloc-counter "$helpers/malloc_counter.so" --wake-floor "$helpers/wake_floor" "${peers[@]}"
