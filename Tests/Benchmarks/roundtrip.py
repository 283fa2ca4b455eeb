#!/usr/bin/env python3
"""Write → echoed-notification round trip: gattway's host and GATT server against a Bumble GATT
server, on one Bumble virtual link, in one run.

  roundtrip.py --gattway PATH/TO/EchoPeripheral [--count 500] [--rounds 3] [--warmup 50] [--size 20]
               [--logs DIR]

Starts Tests/harness/virtual_controller.py, then, in each round, for each peripheral (gattway's
EchoPeripheral, then bumble_echo.py), each its own process on its own virtual controller: a
Bumble phone (in this process, on its own controller) scans for it, connects, subscribes to the
echo characteristic and times `count` sequential round trips: a Write Command with a numbered payload, until the
notification carrying the same bytes arrives (time.perf_counter). Prints p50/p90/mean over all
rounds for both and the ratio gattway / Bumble.

The link, the controllers and the phone are Bumble (Python, in-process asyncio), so the absolute
figures mostly measure the harness; the ratio compares the two peripherals on equal terms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

from bumble import hci
from bumble.core import UUID
from bumble.device import Device
from bumble.transport import open_transport

from bench_support import scan_for, start_process, stop_process, subscribe

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "harness", "virtual_controller.py")
SERVICE_UUID = UUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
ECHO_UUID = UUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")


async def measure(port: int, name: str, count: int, warmup: int, size: int) -> list[float]:
    """Round-trip times in seconds of `count` writes (after `warmup` untimed ones)."""
    async with await open_transport(f"tcp-client:127.0.0.1:{port}") as transport:
        device = Device.with_hci("phone", hci.Address("C1:C2:C3:C4:C5:C6"), transport.source, transport.sink)
        await device.power_on()
        address = await scan_for(device, name)
        echoes: asyncio.Queue[bytes] = asyncio.Queue()
        connection, peer, echo = await subscribe(device, address, SERVICE_UUID, ECHO_UUID,
                                                 lambda value: echoes.put_nowait(bytes(value)))

        times = []
        for index in range(warmup + count):
            payload = index.to_bytes(4, "little") + bytes(size - 4)
            start = time.perf_counter()
            await peer.write_value(echo, payload, with_response=False)
            async with asyncio.timeout(10):
                echoed = await echoes.get()
            elapsed = time.perf_counter() - start
            if echoed != payload:
                raise RuntimeError(f"{name}: round trip {index} echoed {echoed.hex()}, wrote {payload.hex()}")
            if index >= warmup:
                times.append(elapsed)
        await connection.disconnect()
        return times


def summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"p50": statistics.median(ordered) * 1000,
            "p90": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
            "mean": statistics.fmean(ordered) * 1000}


async def run_peripheral(label: str, argv: list[str], port: int, args) -> list[float]:
    name = f"echo-{label}"
    process, _ = await start_process([*argv, f"tcp:127.0.0.1:{port}", name],
                                     os.path.join(args.logs, f"{label}.log"), ready="ready")
    try:
        return await measure(port, name, args.count, args.warmup, args.size)
    finally:
        await stop_process(process)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gattway", required=True, help="the release-built EchoPeripheral executable")
    parser.add_argument("--count", type=int, default=500, help="timed round trips per peripheral and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running both peripherals afresh")
    parser.add_argument("--warmup", type=int, default=50, help="untimed round trips first")
    parser.add_argument("--size", type=int, default=20, help="payload bytes (4 to 20)")
    parser.add_argument("--logs", default=os.path.join(tempfile.gettempdir(), "gattway-roundtrip"),
                        help="directory for the child processes' stderr")
    args = parser.parse_args()
    if not 4 <= args.size <= 20:
        sys.exit("--size must be 4 to 20 (one notification at the default ATT_MTU of 23)")

    os.makedirs(args.logs, exist_ok=True)
    controller, ready = await start_process([sys.executable, HARNESS, "--tcp-port", "0"],
                                            os.path.join(args.logs, "virtual_controller.log"), ready="READY")
    port = int(ready.split("tcp=")[1].split()[0])
    # Rounds alternate the two peripherals so a burst of load on the shared machine hits both.
    times = {"gattway": [], "bumble": []}
    commands = {"gattway": [args.gattway], "bumble": [sys.executable, os.path.join(HERE, "bumble_echo.py")]}
    try:
        for _ in range(args.rounds):
            for label, argv in commands.items():
                times[label] += await run_peripheral(label, argv, port, args)
    finally:
        await stop_process(controller)
    gattway, bumble = summary(times["gattway"]), summary(times["bumble"])

    print(f"Write Command → notification round trip, {args.rounds} rounds × {args.count} timed "
          f"({args.warmup} warm-up each), "
          f"{args.size}-byte payload, Bumble virtual link")
    print(f"{'peripheral':<12}{'p50 ms':>10}{'p90 ms':>10}{'mean ms':>10}")
    for label, figures in (("gattway", gattway), ("Bumble", bumble)):
        print(f"{label:<12}{figures['p50']:>10.3f}{figures['p90']:>10.3f}{figures['mean']:>10.3f}")
    print(f"{'ratio':<12}" + "".join(f"{gattway[key] / bumble[key]:>10.2f}" for key in ("p50", "p90", "mean"))
          + "   (gattway / Bumble; below 1 means gattway is faster)")


if __name__ == "__main__":
    asyncio.run(main())
