#!/usr/bin/env python3
"""Writes the list of functions the event path runs, hottest first, for the release link to lay
out together (Sources/gattway/HotFunctions.order, read by lld's --symbol-ordering-file).

  hot_functions.py --gattway PATH/TO/release/gattway [--out FILE] [--scenarios edges notify mqtt]

Why: the event path runs about 540 functions, 170 KB, that the linker otherwise scatters over the
binary's 15 MB of text (290 pages of 4 kB). Every event wakes the process after another one ran,
and reaching scattered code again costs cache and TLB misses on top of the instructions. gattway's
own 258 of them, compiled a section per function, are laid out in 28 consecutive pages, first;
the Swift runtime's and standard library's come prebuilt, a section per object, and are listed
after them (docs/performance.md, "Code layout").

How: each scenario of event_cost.py runs gattway under callgrind; after the warm-up the counts
are zeroed, then dumped a while later, so only what runs per event is listed, each function by
the instructions it spent in all the scenarios together. Names are the binary's own symbols
(callgrind's demangling is off). Symbols the linker does not find later (code since renamed) are
ignored, so a list a little out of date still works; rerun after reshaping the event path.
Needs valgrind and binutils.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
DEFAULT_OUT = os.path.join(REPO, "Sources", "gattway", "HotFunctions.order")
HEADER = """\
# The functions gattway's event path runs (a GPIO edge, a notification, an MQTT value), hottest
# first: lld lays them out together in the release binary (--symbol-ordering-file, Package.swift).
# Written by Tests/Benchmarks/hot_functions.py from callgrind runs of event_cost.py's scenarios;
# a name no longer in the binary is skipped. Regenerate after reshaping the event path.
"""


def callgrind_pid(out_file: str) -> int | None:
    """The valgrind process writing `out_file` (not the Python parent whose argv names it too)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
            with open(f"/proc/{entry}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            continue
        if f"--callgrind-out-file={out_file}".encode() in argv and not name.startswith("python"):
            return int(entry)
    return None


def profile(gattway: str, scenario: str, work: str) -> dict[str, int]:
    """Instructions per function while `scenario` runs steadily."""
    out_file = os.path.join(work, f"callgrind.{scenario}")
    wrap = f"valgrind --tool=callgrind --demangle=no --callgrind-out-file={out_file}"
    bench = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "event_cost.py"), "--gattway", gattway, "--only", scenario,
         "--rate", "200", "--warmup", "25", "--seconds", "20", "--wrap", wrap, "--logs", os.path.join(work, scenario)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid = None
    for _ in range(120):
        pid = callgrind_pid(out_file)
        if pid:
            break
        time.sleep(0.5)
    if pid is None:
        bench.kill()
        sys.exit(f"hot_functions: gattway did not start under callgrind for {scenario} (see {work}/{scenario})")
    time.sleep(20)  # past start-up, connection and subscription: the steady state
    subprocess.run(["callgrind_control", "-z", str(pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(15)
    subprocess.run(["callgrind_control", "-d", str(pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bench.wait()
    dumps = sorted(f for f in os.listdir(work) if f.startswith(f"callgrind.{scenario}."))
    if not dumps:
        sys.exit(f"hot_functions: callgrind wrote no dump for {scenario}")
    return self_costs(os.path.join(work, dumps[0]))


def self_costs(dump: str) -> dict[str, int]:
    """Each function's own instructions in a callgrind dump (names compressed as "(id) name")."""
    names: dict[str, str] = {}
    costs: dict[str, int] = {}
    current = None
    in_call = False
    cost_line = re.compile(r"^(?:[+-]?\d+|\*) (\d+)")
    with open(dump) as lines:
        for line in lines:
            if line.startswith(("fn=", "cfn=")):
                key, _, rest = line.rstrip("\n").partition("=")
                match = re.match(r"\((\d+)\)(?: (.*))?", rest)
                if match:
                    if match.group(2):
                        names[match.group(1)] = match.group(2)
                    name = names.get(match.group(1), "")
                else:
                    name = rest
                if key == "fn":
                    current = name
            elif line.startswith("calls="):
                in_call = True  # the next cost line is the call's inclusive cost, not own cost
            else:
                match = cost_line.match(line)
                if match and current:
                    if in_call:
                        in_call = False
                    else:
                        costs[current] = costs.get(current, 0) + int(match.group(1))
    return costs


def default_toolchain_libraries() -> str:
    swift = shutil.which("swift")
    if swift is None:
        return ""
    return os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift_static", "linux")


def prebuilt_symbols(directory: str) -> set[str]:
    """The symbols the toolchain's static libraries define (linked in by --static-swift-stdlib)."""
    archives = sorted(glob.glob(os.path.join(directory, "*.a")))
    if not archives:
        sys.exit(f"hot_functions: no static Swift libraries in {directory!r} (--toolchain-libraries)")
    listed = subprocess.run(["nm", "--defined-only", "--format=just-symbols", *archives],
                            capture_output=True, text=True).stdout
    return set(listed.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gattway", required=True, help="a release build of gattway, with its symbols")
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--scenarios", nargs="+", default=["edges", "notify", "mqtt"])
    parser.add_argument("--toolchain-libraries", default=default_toolchain_libraries(),
                        help="the toolchain's static Swift libraries (default: beside `swift` on PATH)")
    args = parser.parse_args()

    symbols = set(subprocess.run(["nm", "--defined-only", "--format=just-symbols", args.gattway],
                                 check=True, capture_output=True, text=True).stdout.split())
    total: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="gattway-hot-") as work:
        # Valgrind cannot read the release build's DWARF; the symbol table is all it needs.
        profiled = os.path.join(work, "gattway")
        subprocess.run(["strip", "--strip-debug", "-o", profiled, args.gattway], check=True)
        for scenario in args.scenarios:
            for name, cost in profile(profiled, scenario, work).items():
                if name in symbols:
                    total[name] = total.get(name, 0) + cost
    # The Swift runtime and libraries come prebuilt (swift_static), a section per object rather than
    # per function: each would be placed whole where its hottest function is listed, splitting
    # gattway's own code. They go after it.
    prebuilt = prebuilt_symbols(args.toolchain_libraries)
    hot = sorted((name for name, cost in total.items() if cost > 0),
                 key=lambda name: (name in prebuilt, -total[name]))
    with open(args.out, "w") as out:
        out.write(HEADER)
        out.write("".join(name + "\n" for name in hot))
    print(f"{len(hot)} functions → {args.out}; SwiftPM does not see the list change: remove the "
          "release gattway binary (or the build directory) for the next build to link it anew")


if __name__ == "__main__":
    main()
