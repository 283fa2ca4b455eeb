#!/usr/bin/env python3
"""CPU time, context switches and allocations per event: the `gattway` executable against a
Bumble peripheral and a BTstack one, on one Bumble virtual link, in one run.

  event_cost.py --gattway PATH/TO/gattway [--seconds 15] [--warmup 3] [--rate 1000]
                [--transport unix|tcp] [--drive socket|timer]
                [--btstack PATH/TO/btstack_notifier]
                [--malloc-counter PATH/TO/malloc_counter.so]
                [--wake-floor PATH/TO/wake_floor] [--callgrind] [--rounds N] [--logs DIR]

Scenarios, each a fresh process on its own virtual controller:
  edges    gattway serving a binary sensor on a simulated line that changes `rate` times a
           second, nothing subscribed: cost per edge. With `--drive socket` (the default) the
           changes come from outside through a descriptor (the benchmark sends each level to the
           line's socket), as a GPIO edge reaches gattway on a Pi; with `--drive timer` the
           simulator's own square wave makes them, so every edge also pays a timer wake-up.
  notify   the same, with a Bumble phone subscribed to the characteristic (notify, no rate
           limit): cost per notification the phone receives (line → sensor → value → notify
           engine → GATT → L2CAP → ACL → controller).
  bumble   a Bumble GATT server (bumble_notifier.py) changing the same kind of characteristic
           `rate` times a second, driven the same way (its own socket, or its own timer), with
           the same phone subscribed: its cost per notification.
  btstack  the same for a BTstack peripheral (btstack/btstack_notifier.c, built from a BTstack
           source tree by btstack/build-btstack-notifier.sh; `--btstack`): an embedded-grade C
           host on BTstack's posix run loop and H4 transport, driven the same way.
  mqtt     the `edges` scenario with the MQTT mirror on, publishing every value (JSON, QoS 1,
           retained: the defaults) to a mosquitto broker on loopback, nothing subscribed over
           Bluetooth: cost per value a broker subscriber receives (line → sensor → value → MQTT).
  mosquitto_pub  the peer for `mqtt`: `mosquitto_pub -l` (libmosquitto's own client) publishing
           the same JSON payload, QoS 1, retained, to the same topic, one line of its standard
           input per change, `rate` times a second: its cost per value the subscriber receives.
  idle     gattway with the line held constant: CPU share and resident memory at rest.

With --rounds N (and both notify and btstack run), N - 1 more rounds of the two follow, alternated,
and the ratio gattway / BTstack is printed for each round and as their median: on a shared VM one
round's ratio moves by a tenth or more with the machine's load.

Per scenario, over `seconds` after `warmup`: process CPU time (user + system, from
/proc/PID/stat, which counts threads that have exited too), context switches (voluntary and
involuntary, summed over /proc/PID/task/*/status), allocations (malloc_counter.so preloaded,
when given), and the events counted (edges generated, notifications received). Prints a table,
the ratio gattway / Bumble per notification, and (with --wake-floor) what a bare wake-up and a
notification's system calls alone cost any process on this machine: the floor under every
per-event figure, and how far above it gattway is.

With --callgrind, a second pass runs the same scenarios under `valgrind --tool=callgrind`
(gattway with its debug information stripped, see `profiled_gattway`) at `--callgrind-rate` and
prints the user-space instructions each process executes per event: callgrind's counts are
zeroed once the scenario is steady and dumped `seconds` later. Not Bumble's: its interpreter
takes minutes to start under valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import os
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bumble import hci
from bumble.core import UUID
from bumble.device import Device
from bumble.transport import open_transport

from bench_support import LineDriver, PayloadLineDriver, scan_for, start_process, stop_process, subscribe

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "..", "harness", "virtual_controller.py")
SERVICE_UUID = UUID("6E400001-B5A3-F393-E0A9-E50E24DC0001")
VALUE_UUID = UUID("6E400002-B5A3-F393-E0A9-E50E24DC0001")
TICKS = os.sysconf("SC_CLK_TCK")
# gattway's topic for the `mqtt` scenario's value: <base>/<device id>/<service>/<characteristic>.
VALUE_TOPIC = "gattway/bench/bench/line"
MOSQUITTO = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"


def gattway_config(name: str, transport: str, generator: str, state_dir: str, broker: int | None = None) -> str:
    mqtt = f"mqtt: {{url: 'mqtt://127.0.0.1:{broker}'}}\n" if broker else ""
    return mqtt + f"""\
device: {{name: {name}, id: bench}}
state_dir: {state_dir}
bluetooth:
  transport: {transport}
  advertising: {{interval: 20ms}}
gpio:
  backend: simulated
  chips:
    - lines:
        - name: LINE
          generator: {generator}
sensors:
  - {{id: line, kind: binary, line: LINE}}
services:
  - uuid: {SERVICE_UUID}
    name: bench
    characteristics:
      - uuid: {VALUE_UUID}
        name: line
        format: bool
        properties: [read, notify]
        source: {{sensor: line}}
"""


class Sample:
    """One reading of a process's counters."""

    def __init__(self, pid: int, malloc_file: str | None):
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        # Fields 14 and 15 of stat (utime, stime); the split starts at field 3.
        self.cpu = (int(fields[11]) + int(fields[12])) / TICKS
        self.switches = 0
        for path in glob.glob(f"/proc/{pid}/task/*/status"):
            try:
                with open(path) as status:
                    for line in status:
                        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                            self.switches += int(line.split()[1])
            except FileNotFoundError:
                pass  # a thread that ended meanwhile
        self.threads = len(glob.glob(f"/proc/{pid}/task/*"))
        with open(f"/proc/{pid}/status") as status:
            self.rss_kb = next(int(line.split()[1]) for line in status if line.startswith("VmRSS"))
        # The process's own memory (heap, stacks, written data): the rest of RSS is clean pages of
        # the binary and shared libraries, which the page cache shares and can drop.
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            self.anonymous_kb = next(int(line.split()[1]) for line in rollup if line.startswith("Anonymous:"))
        self.allocations = None
        if malloc_file:
            with open(malloc_file) as counter:
                self.allocations = int(counter.read())
        self.time = time.monotonic()


async def measure(pid: int, malloc_file: str | None, warmup: float, seconds: float,
                  events) -> dict:
    """Samples the process after `warmup` and again `seconds` later; `events()` counts events."""
    await asyncio.sleep(warmup)
    start, first = Sample(pid, malloc_file), events()
    await asyncio.sleep(seconds)
    end, last = Sample(pid, malloc_file), events()
    count = last - first
    result = {"events": count, "seconds": end.time - start.time, "cpu": end.cpu - start.cpu,
              "switches": end.switches - start.switches, "rss_kb": end.rss_kb,
              "anonymous_kb": end.anonymous_kb, "threads": end.threads,
              "allocations": None if start.allocations is None else end.allocations - start.allocations}
    return result


async def count_instructions(pid: int, out_file: str, warmup: float, seconds: float, events) -> dict:
    """The instructions a process running under callgrind executes over `seconds` after `warmup`:
    zeroes its counts, dumps them `seconds` later and reads the dump's total."""
    await asyncio.sleep(warmup)
    control = shutil.which("callgrind_control") or "callgrind_control"
    await asyncio.to_thread(subprocess.run, [control, "-z", str(pid)], check=True, capture_output=True)
    first = events()
    await asyncio.sleep(seconds)
    await asyncio.to_thread(subprocess.run, [control, "-d", str(pid)], check=True, capture_output=True)
    last = events()
    dumps = sorted(glob.glob(f"{out_file}.*"), key=os.path.getmtime)
    if not dumps:
        raise RuntimeError(f"callgrind wrote no dump beside {out_file}")
    with open(dumps[-1]) as dump:
        total = next(int(line.split()[1]) for line in dump if line.startswith(("totals:", "summary:")))
    return {"events": last - first, "instructions": total}


async def scenario(label: str, argv: list[str], ready: str | None, name: str, port: int, args,
                   subscribed: bool, edges_per_second: float | None, env: dict[str, str],
                   line_socket: str | None, broker: int | None = None, rate: int | None = None,
                   callgrind_out: str | None = None) -> dict:
    malloc_file = env.get("MALLOC_COUNTER_FILE")
    rate = rate or args.rate
    process, _ = await start_process(argv, os.path.join(args.logs, f"{label}.log"), ready=ready, env=env)
    driver = LineDriver(line_socket, rate) if line_socket else None
    if label == "mosquitto_pub":
        driver = PayloadLineDriver(process.stdin.transport.get_extra_info("pipe").fileno(), rate)
    if driver:
        driver.start()

    async def window(events) -> dict:
        if callgrind_out:
            # Under valgrind, start-up takes seconds more before the steady state.
            return await count_instructions(process.pid, callgrind_out, args.warmup + 10, args.seconds, events)
        return await measure(process.pid, malloc_file, args.warmup, args.seconds, events)

    try:
        if broker:
            async with TopicCounter(broker, VALUE_TOPIC) as counter:
                return await window(lambda: counter.received)
        async with await open_transport(f"tcp-client:127.0.0.1:{port}") as transport:
            phone = Device.with_hci("phone", hci.Address("C1:C2:C3:C4:C5:C7"), transport.source, transport.sink)
            await phone.power_on()
            address = await scan_for(phone, name)
            received = [0]
            if subscribed:
                def on_value(_value):
                    received[0] += 1

                connection, _, _ = await subscribe(phone, address, SERVICE_UUID, VALUE_UUID, on_value)
                result = await window(lambda: received[0])
                await connection.disconnect()
            elif driver:
                result = await window(lambda: driver.sent)
            elif edges_per_second is not None:
                result = await window(lambda: time.monotonic() * rate)
            else:
                result = await window(lambda: 0)
            return result
    finally:
        if driver:
            driver.stop()
        await stop_process(process)


async def start_broker(logs: str) -> tuple[asyncio.subprocess.Process, int]:
    """A mosquitto on a free loopback port, for the `mqtt` scenario."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configuration = os.path.join(logs, "mosquitto.conf")
    with open(configuration, "w") as file:
        file.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    broker, _ = await start_process([MOSQUITTO, "-c", configuration], os.path.join(logs, "mosquitto.log"))
    for _ in range(50):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return broker, port
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError(f"mosquitto did not listen on {port} (see {logs}/mosquitto.log)")


class TopicCounter:
    """Counts the messages a `mosquitto_sub` receives on one topic: what the mirror delivered."""

    def __init__(self, port: int, topic: str):
        self.port, self.topic, self.received = port, topic, 0

    async def __aenter__(self):
        self.process = await asyncio.create_subprocess_exec(
            "mosquitto_sub", "-h", "127.0.0.1", "-p", str(self.port), "-t", self.topic,
            stdout=asyncio.subprocess.PIPE)
        self.reader = asyncio.ensure_future(self.read())
        return self

    async def read(self):
        async for _ in self.process.stdout:
            self.received += 1

    async def __aexit__(self, *_):
        self.process.terminate()
        await self.process.wait()
        self.reader.cancel()


async def wake_floor(program: str, rate: int, seconds: float) -> dict[str, float]:
    """Runs wake_floor.c's program: the CPU cost of a bare timer and descriptor wake-up here, and of
    a notification's system calls with nothing else."""
    process = await asyncio.create_subprocess_exec(program, str(rate), str(seconds), stdout=asyncio.subprocess.PIPE)
    output, _ = await process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{program} failed ({process.returncode})")
    return {key: float(value) for key, value in (field.split("=") for field in output.decode().split())}


def per_event(result: dict) -> dict:
    count = max(result["events"], 1)
    return {"cpu_us": result["cpu"] / count * 1e6,
            "switches": result["switches"] / count,
            "allocations": None if result["allocations"] is None else result["allocations"] / count}


SCENARIOS = ["edges", "notify", "btstack", "bumble", "mqtt", "mosquitto_pub", "idle"]


async def run_pass(args, wanted: list[str], port: int, socket_path: str, broker_port: int | None,
                   callgrind: bool) -> dict:
    """Runs each scenario in `wanted` in turn; under callgrind, each process's instructions."""
    peripheral_transport = f"unix:{socket_path}" if args.transport == "unix" else f"tcp:127.0.0.1:{port}"
    results = {}
    for label in wanted:
        rate = args.callgrind_rate if callgrind else args.rate
        env = dict(os.environ)
        if args.malloc_counter and not callgrind:
            env["LD_PRELOAD"] = os.path.abspath(args.malloc_counter)
            env["MALLOC_COUNTER_FILE"] = os.path.join(args.logs, f"{label}.allocations")
        name = f"cost-{label}"
        line_socket = None
        if args.drive == "socket" and label not in ("idle", "mosquitto_pub"):
            line_socket = os.path.join(args.logs, f"{label}.line")
            if os.path.exists(line_socket):
                os.unlink(line_socket)
        if label == "mosquitto_pub":
            argv = ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(broker_port), "-t", VALUE_TOPIC,
                    "-q", "1", "-r", "-l"]
        elif label == "bumble":
            argv = [sys.executable, os.path.join(HERE, "bumble_notifier.py"), peripheral_transport,
                    name, str(rate)] + ([line_socket] if line_socket else [])
        elif label == "btstack":
            argv = [args.btstack, peripheral_transport, name, str(rate)] + ([line_socket] if line_socket else [])
        else:
            generator = "{type: constant, level: 0}" if label == "idle" else (
                f"{{type: socket, path: {line_socket}}}" if line_socket else
                f"{{type: square, period: {2_000_000 // rate}us}}")  # two edges per period
            # One per scenario, emptied before each run: a directory of its own per run piled up
            # in the logs directory, hundreds over a day of profiling.
            state_dir = os.path.join(args.logs, f"state-{label}")
            shutil.rmtree(state_dir, ignore_errors=True)
            os.makedirs(state_dir)
            config = os.path.join(args.logs, f"{label}.yaml")
            with open(config, "w") as file:
                file.write(gattway_config(name, peripheral_transport, generator, state_dir,
                                          broker=broker_port if label in ("mqtt", "mosquitto_pub") else None))
            executable = profiled_gattway(args) if callgrind else args.gattway
            argv = shlex.split(args.wrap) + [executable, "run", "--config", config, "--log-level", "warning"]
        callgrind_out = None
        if callgrind:
            callgrind_out = os.path.join(args.logs, f"callgrind.{label}")
            for stale in glob.glob(f"{callgrind_out}.*"):
                os.unlink(stale)
            argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind_out}.%p"] + argv
        results[label] = await scenario(label, argv, "ready" if label in ("bumble", "btstack") else None, name,
                                        port, args, subscribed=label in ("notify", "bumble", "btstack"),
                                        edges_per_second=rate if label == "edges" else None, env=env,
                                        line_socket=line_socket,
                                        broker=broker_port if label in ("mqtt", "mosquitto_pub") else None,
                                        rate=rate, callgrind_out=callgrind_out)
    return results


def profiled_gattway(args) -> str:
    """gattway as callgrind runs it: the shipped binary with its debug information stripped. The
    Swift 6 toolchain writes DWARF 5 that valgrind 3.19 cannot read (it stops at start-up); the
    symbol table, which callgrind needs to name functions, stays."""
    stripped = os.path.join(args.logs, "gattway.profiled")
    subprocess.run(["strip", "--strip-debug", "-o", stripped, args.gattway], check=True)
    return stripped


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gattway", required=True, help="the release-built gattway executable")
    parser.add_argument("--seconds", type=float, default=15, help="measured window per scenario")
    parser.add_argument("--warmup", type=float, default=3, help="seconds before the window opens")
    parser.add_argument("--rate", type=int, default=1000, help="value changes (edges) per second")
    parser.add_argument("--malloc-counter", help="malloc_counter.so, to count allocations")
    parser.add_argument("--logs", default=os.path.join(tempfile.gettempdir(), "gattway-event-cost"),
                        help="directory for the child processes' stderr and the configurations")
    parser.add_argument("--wrap", default="", help="a command to run gattway under (e.g. valgrind "
                        "--tool=callgrind), for profiling; its figures are then the wrapper's")
    parser.add_argument("--transport", choices=["unix", "tcp"], default="unix",
                        help="how gattway and the Bumble peripheral reach their controller: a Unix "
                        "socket (default; the closest to a Pi's HCI user channel, a socket without a "
                        "TCP stack) or TCP loopback")
    parser.add_argument("--drive", choices=["socket", "timer"], default="socket",
                        help="what changes the line: the benchmark through the line's socket (default; "
                        "a descriptor wakes the peripheral, as a kernel GPIO edge does) or the "
                        "peripheral's own timer (the simulator's square wave, Bumble's toggle loop)")
    parser.add_argument("--wake-floor", help="wake_floor (built from wake_floor.c): measures this "
                        "machine's CPU cost of a bare wake-up in the same run")
    parser.add_argument("--btstack", help="the BTstack peripheral (btstack_notifier, built by "
                        "btstack/build-btstack-notifier.sh from BTSTACK_SRC): the `btstack` scenario")
    parser.add_argument("--callgrind", action="store_true", help="then count each process's instructions "
                        "per event under valgrind's callgrind (a second pass)")
    parser.add_argument("--callgrind-rate", type=int, default=200,
                        help="value changes per second in the callgrind pass")
    parser.add_argument("--only", nargs="*", choices=SCENARIOS, help="run only these scenarios")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with notify and btstack both run: rounds of the two, alternated, the "
                        "first in the table; prints each round's ratio and their median, since one "
                        "round's ratio moves with the machine's load")
    args = parser.parse_args()
    os.makedirs(args.logs, exist_ok=True)
    wanted = args.only or [label for label in SCENARIOS if label != "btstack" or args.btstack]
    if "btstack" in wanted and not args.btstack:
        parser.error("the btstack scenario needs --btstack (build-btstack-notifier.sh with BTSTACK_SRC)")
    if not args.btstack:
        print("No BTstack peer in this run: --btstack not given (Tests/Benchmarks/btstack/"
              "build-btstack-notifier.sh builds it from a BTstack tree given in BTSTACK_SRC)", flush=True)

    # The phone always reaches the controller over TCP; the peripherals (gattway, Bumble, BTstack)
    # over `--transport`, all the same way.
    socket_path = os.path.join(args.logs, "controller.socket")
    controller, ready = await start_process([sys.executable, HARNESS, "--tcp-port", "0", "--unix", socket_path],
                                            os.path.join(args.logs, "virtual_controller.log"), ready="READY")
    port = int(ready.split("tcp=")[1].split()[0])
    uses_broker = {"mqtt", "mosquitto_pub"} & set(wanted)
    broker, broker_port = await start_broker(args.logs) if uses_broker else (None, None)
    try:
        results = await run_pass(args, wanted, port, socket_path, broker_port, callgrind=False)
        rounds = []
        if "notify" in results and "btstack" in results:
            rounds.append((results["notify"], results["btstack"]))
            for _ in range(args.rounds - 1):
                again = await run_pass(args, ["notify", "btstack"], port, socket_path, broker_port, callgrind=False)
                rounds.append((again["notify"], again["btstack"]))
        # Not Bumble: its interpreter under valgrind takes minutes to start.
        instructions = (await run_pass(args, [label for label in wanted if label not in ("idle", "bumble")], port,
                                       socket_path, broker_port, callgrind=True) if args.callgrind else {})
    finally:
        await stop_process(controller)
        if broker:
            await stop_process(broker)

    drive = ("sent to the line's socket by the benchmark (a descriptor wakes the peripheral)"
             if args.drive == "socket" else "made by the peripheral's own timer")
    print(f"Event cost, {args.rate} value changes/s {drive}, {args.seconds:g} s measured after "
          f"{args.warmup:g} s (process CPU time from /proc; {os.cpu_count()} cores)")
    print(f"{'scenario':<14}{'events':>9}{'CPU %':>8}{'CPU µs/event':>14}{'switches/event':>16}"
          f"{'allocs/event':>14}{'RSS MB':>8}{'own MB':>8}{'threads':>9}")
    for label, result in results.items():
        share = result["cpu"] / result["seconds"] * 100
        rss, own = result["rss_kb"] / 1024, result["anonymous_kb"] / 1024
        if label == "idle":
            print(f"{label:<14}{'-':>9}{share:>8.2f}{'-':>14}{'-':>16}{'-':>14}{rss:>8.1f}{own:>8.1f}"
                  f"{result['threads']:>9}")
            continue
        cost = per_event(result)
        allocations = "-" if cost["allocations"] is None else f"{cost['allocations']:.1f}"
        print(f"{label:<14}{result['events']:>9.0f}{share:>8.2f}{cost['cpu_us']:>14.1f}"
              f"{cost['switches']:>16.2f}{allocations:>14}{rss:>8.1f}{own:>8.1f}{result['threads']:>9}")
    print("(own MB: anonymous memory, the process's own; the rest of RSS is clean pages of the "
          "binary and shared libraries)")
    if "notify" in results and "bumble" in results:
        ratio = per_event(results["notify"])["cpu_us"] / per_event(results["bumble"])["cpu_us"]
        print(f"CPU per notification, gattway / Bumble: {ratio:.2f}")
    if "notify" in results and "btstack" in results:
        ratio = per_event(results["notify"])["cpu_us"] / per_event(results["btstack"])["cpu_us"]
        print(f"CPU per notification, gattway / BTstack: {ratio:.2f}")
    if len(rounds) > 1:
        ours = [per_event(notify)["cpu_us"] for notify, _ in rounds]
        theirs = [per_event(btstack)["cpu_us"] for _, btstack in rounds]
        ratios = [mine / peer for mine, peer in zip(ours, theirs)]
        print(f"CPU per notification over {len(rounds)} rounds of notify and btstack, alternated (the first "
              f"is the table's): gattway {', '.join(f'{cost:.1f}' for cost in ours)} µs; BTstack "
              f"{', '.join(f'{cost:.1f}' for cost in theirs)} µs; gattway / BTstack "
              f"{', '.join(f'{ratio:.2f}' for ratio in ratios)}, median {statistics.median(ratios):.2f}")
    if "mqtt" in results and "mosquitto_pub" in results:
        ratio = per_event(results["mqtt"])["cpu_us"] / per_event(results["mosquitto_pub"])["cpu_us"]
        print(f"CPU per value published over MQTT, gattway (line → value → MQTT) / mosquitto_pub (a line "
              f"of its input → MQTT): {ratio:.2f}")
    if args.wake_floor:
        floor = await wake_floor(args.wake_floor, args.rate, args.seconds)
        print(f"This machine's floor per event ({args.rate} wake-ups/s of a C loop doing nothing else): "
              f"{floor['timer_us']:.1f} µs when its own timer wakes it (a simulated line's edge, Bumble's "
              f"toggle), {floor['descriptor_us']:.1f} µs when a descriptor does (a kernel GPIO edge, an HCI "
              f"packet), {floor['datagram_us']:.1f} µs when a datagram does (the simulated line's socket); "
              f"{floor['notification_us']:.1f} µs for a notification's system calls alone (woken by "
              f"the edge, write the packet to a waiting controller, woken by its completion)")
        if "notify" in results:
            above = per_event(results["notify"])["cpu_us"] - floor["notification_us"]
            print(f"gattway per notification above that floor: {above:.1f} µs")
        if "edges" in results:
            edge = per_event(results["edges"])["cpu_us"]
            print(f"gattway per edge above the descriptor floor: {edge - floor['descriptor_us']:.1f} µs")
            if args.drive == "socket":
                print(f"gattway per edge above the datagram floor (the wake-up its simulated line's socket "
                      f"costs): {edge - floor['datagram_us']:.1f} µs")
    if instructions:
        print(f"User-space instructions per event (callgrind, {args.callgrind_rate} value changes/s, "
              f"{args.seconds:g} s counted):")
        for label, result in instructions.items():
            count = result["events"]
            each = f"{result['instructions'] / count:,.0f}" if count else "no events"
            print(f"  {label:<14}{each:>12}  ({result['instructions']:,} over {count:.0f} events)")
    binary = os.path.realpath(args.gattway)
    stripped = os.path.join(args.logs, "gattway.stripped")
    if os.system(f"strip -o '{stripped}' '{binary}' 2>/dev/null") == 0:
        print(f"gattway binary: {os.path.getsize(binary) / 1e6:.1f} MB, stripped {os.path.getsize(stripped) / 1e6:.1f} MB")


if __name__ == "__main__":
    asyncio.run(main())
