#!/usr/bin/env python3
"""The checks of the power-cut stage (Tests/vm/power-cut-tests.sh).

  power-cut-check.py inspect STATE_DIR
      In the VM, on the state disk as the power cut left it (mounted again): prints one
      "found ..." line per state file it reads, strictly (a counter total is digits and a
      newline; every line of the outbox's journal is a whole JSON record, but for a last one
      torn mid-write, which MQTTOutbox skips; every pending event's payload is whole), and a
      "TORN ..." line for anything else.

  power-cut-check.py compare BEFORE_LOG AFTER_LOG
      On the host, with the output of two boots: what the boot before the cut acknowledged
      (gattway's published counter totals, the probes' saved totals, bond generations and
      durable outbox events) against what the boot after found. Prints what was checked and
      exits 1 when a state file was torn, an acknowledged event is missing or a total went back.
"""

import base64
import json
import os
import re
import sys


def inspect(state):
    def counter(name, path):
        if not os.path.exists(path):
            print(f"found {name} none")
            return
        text = open(path, "rb").read().decode("utf-8", "replace")
        if re.fullmatch(r"[0-9]+\n", text):
            print(f"found {name} {int(text)}")
        else:
            print(f"TORN {path}: {text!r}")

    counter("gattway-total", f"{state}/gattway/pulses.count")
    counter("probe-total", f"{state}/probe.count")

    path = f"{state}/outbox/outbox.jsonl"
    pending = {}
    if os.path.exists(path):
        data = open(path, "rb").read()
        lines = data.split(b"\n")
        if data.endswith(b"\n"):
            lines.pop()
        for number, line in enumerate(lines):
            try:
                record = json.loads(line)
            except ValueError:
                if number == len(lines) - 1:
                    print(f"found outbox-torn-tail line {number + 1} ({len(line)} bytes, skipped on load)")
                else:
                    print(f"TORN {path}: line {number + 1} of {len(lines)} is damaged: {line[:80]!r}")
                continue
            if "add" in record:
                topic = record.get("topic", "")
                payload = base64.b64decode(record.get("payload", ""))
                if payload != (topic + ";").encode() * 8:
                    print(f"TORN {path}: event {topic} has payload {payload[:80]!r}")
                pending[record["add"]] = topic
            elif "done" in record:
                pending.pop(record["done"], None)
    print("found outbox-pending " + " ".join(pending[k] for k in sorted(pending)))


def read_log(path):
    lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    log = {"published": [], "probe-saved": [], "bonds-saved": [], "durable": set(), "acknowledged": set(),
           "found": {}, "problems": [], "pending": [], "fsck": None, "bonds-found": None}
    for line in lines:
        fields = line.split(" ")
        match fields:
            case ["gattway", "published", value]:
                log["published"].append(int(float(value)))
            case ["counter", "saved", value]:
                log["probe-saved"].append(int(value))
            case ["bonds", "saved", value]:
                log["bonds-saved"].append(int(value))
            case ["bonds", "found", value]:
                log["bonds-found"] = int(value)
            case ["outbox", "durable", topic]:
                log["durable"].add(topic)
            case ["outbox", "acknowledged", topic]:
                log["acknowledged"].add(topic)
            case ["found", "outbox-pending", *topics]:
                log["pending"] = [topic for topic in topics if topic]
            case ["found", name, value] if value != "none" and name.endswith("-total"):
                log["found"][name] = int(value)
            case ["TORN" | "FAIL", *_] | [_, "StateFileProbe:", *_] | [_, "exited", _]:
                log["problems"].append(line)
            case ["fsck", *rest]:
                log["fsck"] = " ".join(rest)
    return log


def compare(before_path, after_path):
    before, after = read_log(before_path), read_log(after_path)
    failures = []
    checked = []
    if after["fsck"] != "clean":
        failures.append(f"fsck -n of the state disk: {after['fsck']}")
    else:
        checked.append("fsck clean")
    failures += after["problems"]

    def total(name, found, acknowledged, what):
        if not acknowledged:
            failures.append(f"{name}: nothing was {what} before the cut (the load did not run?)")
            return
        last = max(acknowledged)
        if found is None or found < last:
            failures.append(f"{name} went back: {last} was {what} before the cut, {found} after it")
        else:
            checked.append(f"{name} {found} >= {last} {what}")

    total("gattway's counter", after["found"].get("gattway-total"), before["published"], "published")
    total("probe counter", after["found"].get("probe-total"), before["probe-saved"], "saved")
    total("bonds generation", after["bonds-found"], before["bonds-saved"], "saved")

    # Every event that was durable (or pending at the boot before, so durable then) and not
    # acknowledged must be pending now; an acknowledged one may come back (a lost `done` record).
    # The probe acknowledges the oldest event, then says so: the cut may fall between the two,
    # so the oldest may be gone unannounced (as in StateFileTests' SIGKILL test).
    def order(topic):
        _, run, number = topic.split("/")
        return int(run), int(number)

    expected = sorted((set(before["pending"]) | before["durable"]) - before["acknowledged"], key=order)
    missing = [topic for topic in expected if topic not in set(after["pending"])]
    note = ""
    if missing and missing == expected[:1]:
        missing, note = [], f" but the oldest, {expected[0]}, acknowledged as the power went"
    if not before["durable"]:
        failures.append("outbox: no event was durable before the cut (the load did not run?)")
    elif missing:
        failures.append(f"outbox lost {len(missing)} durable unacknowledged event(s): {' '.join(missing[:10])}")
    else:
        checked.append(f"outbox holds all {len(expected)} durable unacknowledged events{note}")
    print("  checked: " + "; ".join(checked))
    for failure in failures:
        print(f"  FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "inspect":
        inspect(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        sys.exit(compare(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
