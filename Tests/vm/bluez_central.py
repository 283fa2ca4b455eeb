#!/usr/bin/env python3
"""BlueZ as the central: bleak through bluetoothd drives the `gattway` executable.

Runs inside bluez-central-guest.sh's VM, where the system D-Bus, bluetoothd (on the two kernel
adapters that virtual_controller.py --vhci attached: two phones) and btmon already run. gattway
reaches the same virtual link through the controller's Unix socket. Every step prints one line;
the first failed check ends the run with exit status 1.

  bluez_central.py --gattway PATH --hci unix:PATH --workdir DIR --adapter hciN --btmon FILE
                   --second-adapter hciM --second-btmon FILE

gattway runs with `bluetooth.security.pairing: window` (the default) and no window at its first
start. Steps: scan (local name and service UUID), connect, discover, read every readable
characteristic, notifications and indications, Write Request and Write Command; outside the
pairing window a relay (an output sensor on a simulated line, its write needing an encrypted,
bonded link) refuses the first phone's writes and gattway refuses its pairing, both when BlueZ
pairs by itself on the write's Insufficient Authentication and through bleak's pair(); `gattway
pair --for 2m` opens the window: pair() pairs Just Works through a NoInputNoOutput agent, the
relay is driven and the other protected characteristic written; `gattway pair --close`: a second
new phone (BlueZ's second adapter) is refused the same ways, and pairs by itself on its relay
write once the window is opened again; a bonded reconnection of the first phone, window closed,
without pairing again; then the attribute cache: gattway restarted with a changed layout (one
characteristic removed, one added) and again unchanged. Every read is checked against that characteristic's own value (see
read_all), so a client that used stale or shifted handles fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from bleak import BleakClient, BleakScanner
from bleak.backends.bluezdbus.manager import get_global_bluez_manager
from bleak.exc import BleakDBusError, BleakError
from dbus_fast import BusType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method

NAME = "bluez-e2e"


def uuid(suffix: str) -> str:
    return f"6e400001-b5a3-f393-e0a9-e50e24dc{suffix.lower()}"


SERVICE = uuid("B2E0")
STATIC = uuid("B2E1")  # "gattway", in both layouts
RETIRED = uuid("B2E2")  # only in the first layout, before the counter (handles shift)
COUNTER = uuid("B2E3")  # counter "pulses", notified: from 0
INDICATED = uuid("B2E4")  # counter "beats", indicated: from 1 000 000
WRITABLE = uuid("B2E5")  # open: request and command
PROTECTED = uuid("B2E6")  # default write permission: encrypted and bonded
RELAY = uuid("B2E8")  # output "relay" on a simulated line: written only on an encrypted, bonded link
ADDED = uuid("B2E7")  # only in the second layout: counter "ticks", notified: from 2 000 000

# Each counter counts its own line's pulses from its own offset, so the three uint32 values never
# meet and a read answered from another counter's handle fails; the written characteristics start
# from values of their own for the same reason (gattway does not keep written values across a
# restart: each run starts from these).
WRITABLE_INITIAL, PROTECTED_INITIAL = b"\xa1\xa1", b"\xb2"
# `<service>/<characteristic>` as `gattway status` names them, for the characteristics whose
# value is a sensor's.
STATUS_NAMES = {COUNTER: "bluez/counter", INDICATED: "bluez/indicated", ADDED: "bluez/added", RELAY: "bluez/relay"}


def layout(changed: bool, state_dir: str, runtime_dir: str) -> str:
    retired = "" if changed else f"""
      - {{uuid: {RETIRED}, name: retired, format: utf8, source: {{static: retired}}}}"""
    # The added characteristic notifies (a CCCD more), so the service's handle range grows:
    # BlueZ 5.66 keeps a cached service whose range did not move, whatever the Database Hash says.
    added = f"""
      - {{uuid: {ADDED}, name: added, format: uint32, properties: [read, notify], source: {{sensor: ticks}}}}""" \
        if changed else ""
    ticks = """
  - {id: ticks, kind: counter, line: TICKS, filters: [{offset: 2000000}]}""" if changed else ""
    return f"""device: {{name: {NAME}}}
bluetooth:
  advertising: {{local_name: {NAME}, service_uuids: [{SERVICE}], interval: 20ms}}
  security: {{pairing: window, first_start_window: 0s}}
gpio:
  backend: simulated
  chips:
    - label: bluez
      lines:
        - name: PULSES
          generator: {{type: pulses, rate: 2}}
        - name: BEATS
          generator: {{type: pulses, rate: 2}}
        - name: TICKS
          generator: {{type: pulses, rate: 2}}
        - name: RELAY
sensors:
  - {{id: pulses, kind: counter, line: PULSES}}
  - {{id: beats, kind: counter, line: BEATS, filters: [{{offset: 1000000}}]}}
  - {{id: relay, kind: output, line: RELAY}}{ticks}
services:
  - uuid: {SERVICE}
    name: bluez
    characteristics:
      - {{uuid: {STATIC}, name: static, format: utf8, source: {{static: gattway}}}}{retired}
      - {{uuid: {COUNTER}, name: counter, format: uint32, properties: [read, notify], source: {{sensor: pulses}}}}
      - {{uuid: {INDICATED}, name: indicated, format: uint32, properties: [read, indicate], source: {{sensor: beats}}}}
      - uuid: {WRITABLE}
        name: writable
        format: bytes
        properties: [read, write, write_without_response]
        permissions: {{write: open}}
        source: {{written: "{WRITABLE_INITIAL.hex()}"}}
      - {{uuid: {PROTECTED}, name: protected, format: bytes, properties: [read, write], source: {{written: "{PROTECTED_INITIAL.hex()}"}}}}
      - uuid: {RELAY}
        name: relay
        format: bool
        properties: [read, write, write_without_response, notify]
        permissions: {{write: [encrypted, bonded]}}
        source: {{sensor: relay}}{added}
state_dir: {state_dir}
runtime_dir: {runtime_dir}
"""


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


STARTED = time.monotonic()


def step(text: str) -> None:
    print(f"[bluez-central] ok ({time.monotonic() - STARTED:.0f} s): {text}", flush=True)


# gattway's log line for a Pairing Request refused outside the window.
REFUSED = "refused: no pairing window is open"


@dataclass
class Phone:
    """One of BlueZ's adapters as a phone: its name (hci0), btmon's record of its traffic, and its
    own address (a central's identity as gattway sees it)."""
    adapter: str
    btmon: str
    address: str = ""

    @property
    def bluez(self) -> dict:
        """bleak's argument that puts a scanner or client on this adapter."""
        return {"adapter": self.adapter}


class Gattway:
    """`gattway run` as a child; its log in a file, read for lines."""

    def __init__(self, executable: str, hci: str, workdir: str):
        self.executable, self.hci, self.workdir = executable, hci, workdir
        self.process: subprocess.Popen | None = None
        self.runs = 0
        self.log_path = ""
        self.config = ""

    async def start(self, changed: bool) -> None:
        self.runs += 1
        self.config = os.path.join(self.workdir, f"gattway-{self.runs}.yaml")
        runtime_dir = os.path.join(self.workdir, "run")  # where `gattway status` finds control.sock
        os.makedirs(runtime_dir, mode=0o700, exist_ok=True)
        with open(self.config, "w") as file:
            file.write(layout(changed, os.path.join(self.workdir, "state"), runtime_dir))
        self.log_path = os.path.join(self.workdir, f"gattway-{self.runs}.log")
        self.process = subprocess.Popen(
            [self.executable, "run", "--config", self.config, "--hci", self.hci, "--log-level", "info"],
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        await self.wait_for("gattway: advertising\n", 60)
        await self.wait_for("control socket ", 5)

    async def command(self, *arguments: str) -> str:
        """`gattway <arguments> --config <this run's>` (status, pair: the control socket): its output."""
        process = await asyncio.create_subprocess_exec(
            self.executable, *arguments, "--config", self.config,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), 30)
        check(process.returncode == 0,
              f"gattway {' '.join(arguments)} exited {process.returncode}: {err.decode().strip()}")
        return out.decode().strip()

    async def status(self) -> dict:
        """`gattway status --json`: what the running gattway says on its control socket."""
        return json.loads(await self.command("status", "--json"))

    async def values(self) -> dict[str, str | None]:
        """Each sensor-sourced characteristic's current value as gattway holds it, by
        `<service>/<characteristic>`: `true`/`false` for the relay, decimal for the counters."""
        status = await self.status()
        return {value["characteristic"]: value.get("value") for sensor in status["sensors"] for value in sensor["values"]}

    async def central(self, phone: Phone) -> dict:
        """`phone`'s link as `gattway status` reports it (security, bonded)."""
        centrals = (await self.status())["centrals"]
        mine = [central for central in centrals if phone.address.upper() in central["address"].upper()]
        check(len(mine) == 1, f"gattway status shows {centrals}, expected one link of {phone.adapter} ({phone.address})")
        return mine[0]

    def refusals(self) -> int:
        """Pairing Requests gattway logged as refused outside the window."""
        return self.log().count(REFUSED)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as file:
            return file.read()

    async def wait_for(self, text: str, timeout: float, since: int = 0) -> None:
        """Until the log after position `since` contains `text`."""
        deadline = time.monotonic() + timeout
        while text not in self.log()[since:]:
            check(self.process.poll() is None, f"gattway exited ({self.process.returncode}) before '{text.strip()}'")
            check(time.monotonic() < deadline, f"gattway did not log '{text.strip()}' within {timeout} s")
            await asyncio.sleep(0.2)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait(30)
        check(status == 0, f"gattway exited {status} on SIGTERM")


class JustWorksAgent(ServiceInterface):
    """The default agent, NoInputNoOutput, as a headless host has one: Just Works asks it nothing."""

    def __init__(self):
        super().__init__("org.bluez.Agent1")

    @method()
    def Release(self):
        pass

    @method()
    def RequestAuthorization(self, device: "o"):
        pass

    @method()
    def AuthorizeService(self, device: "o", uuid: "s"):
        pass

    @method()
    def Cancel(self):
        pass


async def prepare_adapters(phones: list[Phone]) -> MessageBus:
    """Registers the default agent (NoInputNoOutput), powers each phone's adapter, makes it
    pairable and reads its address."""
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    bus.export("/gattway/agent", JustWorksAgent())
    introspection = await bus.introspect("org.bluez", "/org/bluez")
    manager = bus.get_proxy_object("org.bluez", "/org/bluez", introspection).get_interface("org.bluez.AgentManager1")
    await manager.call_register_agent("/gattway/agent", "NoInputNoOutput")
    await manager.call_request_default_agent("/gattway/agent")
    for phone in phones:
        path = f"/org/bluez/{phone.adapter}"
        introspection = await bus.introspect("org.bluez", path)
        properties = bus.get_proxy_object("org.bluez", path, introspection).get_interface(
            "org.freedesktop.DBus.Properties")
        await properties.call_set("org.bluez.Adapter1", "Powered", Variant("b", True))
        await properties.call_set("org.bluez.Adapter1", "Pairable", Variant("b", True))
        phone.address = (await properties.call_get("org.bluez.Adapter1", "Address")).value
    return bus


def btmon_text(btmon_file: str) -> str:
    return subprocess.run(["btmon", "-r", btmon_file], capture_output=True, text=True, timeout=60).stdout


def att_requests(btmon_file: str, name: str) -> int:
    """How many ATT PDUs called `name` btmon recorded so far."""
    return btmon_text(btmon_file).count(name)


def btmon_frames(btmon_file: str) -> list[str]:
    """btmon's record so far, one string per frame: its header line (`<` sent by BlueZ's
    adapter, `>` received, `@` management, `=` notes) and the indented decoding below it."""
    frames: list[str] = []
    for line in btmon_text(btmon_file).splitlines():
        if line[:2] in ("< ", "> ", "@ ", "= ") or not frames:
            frames.append(line)
        else:
            frames[-1] += "\n" + line
    return frames


def frame_handle(frame: str) -> int | None:
    match = re.search(r"Handle: 0x([0-9a-fA-F]{4})", frame)
    return int(match.group(1), 16) if match else None


def protected_write_on_air(frames: list[str], value_handle: int) -> list[str]:
    """What btmon recorded around BlueZ's Write Requests to `value_handle`, in order: gattway's
    Error Responses to them (`refused: <error> (0x..)`), its Write Responses to them (`written`;
    ATT has one request outstanding, so a response answers the last request), SMP Pairing
    Requests, gattway's Pairing Failed (`pairing refused: <reason> (0x..)`, lower case) and
    Encryption Changes."""
    events: list[str] = []
    pending: int | None = None  # the handle of BlueZ's Write Request awaiting its answer
    for frame in frames:
        if frame.startswith("< ") and "ATT: Write Request" in frame:
            pending = frame_handle(frame)
        elif frame.startswith("> ") and "ATT: Error Response" in frame and "Write Request (0x12)" in frame:
            if frame_handle(frame) == value_handle:
                error = re.search(r"Error: (.*\(0x[0-9a-fA-F]{2}\))", frame)
                events.append(f"refused: {error.group(1) if error else '?'}")
            pending = None
        elif frame.startswith("> ") and "ATT: Write Response" in frame:
            if pending == value_handle:
                events.append("written")
            pending = None
        elif "SMP: Pairing Request" in frame:
            events.append("pairing")
        elif frame.startswith("> ") and "SMP: Pairing Failed" in frame:
            reason = re.search(r"Reason: (.*\(0x[0-9a-fA-F]{2}\))", frame)
            events.append(f"pairing refused: {reason.group(1).lower() if reason else '?'}")
        elif "Encryption Change" in frame:
            events.append("encrypted")
    return events


DISCOVERY = "ATT: Read By Group Type Request"
LAYOUT_A = {STATIC, RETIRED, COUNTER, INDICATED, WRITABLE, PROTECTED, RELAY}
LAYOUT_B = {STATIC, COUNTER, INDICATED, WRITABLE, PROTECTED, RELAY, ADDED}
# The counters' values: each from its own offset (see layout), never reaching the next one here.
RANGES = {COUNTER: range(0, 1_000_000), INDICATED: range(1_000_000, 2_000_000), ADDED: range(2_000_000, 3_000_000)}


async def characteristics(client: BleakClient) -> dict[str, object]:
    service = client.services.get_service(SERVICE)
    check(service is not None, f"service {SERVICE} not discovered")
    return {c.uuid: c for c in service.characteristics}


async def received(client: BleakClient, characteristic, count: int, timeout: float) -> list[int]:
    """`count` values of `characteristic` (bleak's, or a UUID) after subscribing, each in that
    counter's own range."""
    uuid_ = getattr(characteristic, "uuid", characteristic)
    values: list[int] = []
    done = asyncio.Event()

    def on_value(_, data: bytearray) -> None:
        values.append(int.from_bytes(data, "little"))
        if len(values) >= count:
            done.set()

    await client.start_notify(characteristic, on_value)
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        raise Failure(f"{len(values)} of {count} values of {uuid_} within {timeout} s")
    finally:
        await client.stop_notify(characteristic)
    check(all(value in RANGES[uuid_] for value in values), f"{STATUS_NAMES[uuid_]} ({uuid_}) delivered {values}, "
          f"outside its range {RANGES[uuid_]}")
    return values


async def settled_layout(client: BleakClient, expected: set[str], timeout: float = 20) -> dict[str, object]:
    """Our service's characteristics as BlueZ exports them once they have been `expected` for two
    seconds. bleak takes its copy when BlueZ first reports the services resolved, from BlueZ's
    cache; BlueZ replaces them when its Database Hash check finds the database changed, and once
    more for gattway's Service Changed indication, so this asks BlueZ again (bleak has no public
    call for that: the device's D-Bus path is its backend's)."""
    manager = await get_global_bluez_manager()
    path = client._backend._device_path
    deadline = time.monotonic() + timeout
    stable = 0
    while True:
        services = await manager.get_services(path, False, None)
        service = services.get_service(SERVICE)
        chars = {c.uuid: c for c in service.characteristics} if service else {}
        stable = stable + 1 if set(chars) == expected else 0
        if stable == 5:
            return chars
        check(time.monotonic() < deadline, f"BlueZ shows {sorted(chars)}, expected {sorted(expected)}")
        await asyncio.sleep(0.5)


async def read_all(client: BleakClient, gattway: Gattway, fixed: dict[str, bytes],
                   chars: dict[str, object] | None = None) -> None:
    """Reads every readable characteristic and checks that each returns ITS value: exactly
    `fixed` for the static and written ones and the relay (whose level gattway's status must
    show too); for a counter, a value between gattway's own values of that characteristic just
    before and just after the reads (`gattway status`). The counters' ranges are apart and the
    written values differ, so a read answered from another characteristic's handle (a client on
    stale or shifted handles) fails."""
    chars = chars or await characteristics(client)
    readable = {uuid_: c for uuid_, c in chars.items() if "read" in c.properties}
    counters = set(readable) & set(RANGES)
    check(set(readable) == set(fixed) | counters,
          f"readable {sorted(readable)}, values expected for {sorted(set(fixed) | counters)}")
    before = await gattway.values()
    reads = {uuid_: bytes(await client.read_gatt_char(c)) for uuid_, c in readable.items()}
    after = await gattway.values()
    for uuid_, value in reads.items():
        if uuid_ in fixed:
            check(value == fixed[uuid_], f"{uuid_} read {value.hex()}, expected {fixed[uuid_].hex()}")
            continue
        name = STATUS_NAMES[uuid_]
        low, high = int(before[name]), int(after[name])
        count = int.from_bytes(value, "little")
        check(len(value) == 4 and low <= count <= high and count in RANGES[uuid_],
              f"{name} ({uuid_}) read {value.hex()} ({count}); gattway's value went from {low} to {high}")
    if RELAY in fixed:
        level = {b"\x00": "false", b"\x01": "true"}[fixed[RELAY]]
        check(after[STATUS_NAMES[RELAY]] == level, f"gattway status shows the relay {after[STATUS_NAMES[RELAY]]}, "
              f"read {level}")


async def drive_relay(client: BleakClient, gattway: Gattway, level: bool, characteristic=RELAY) -> None:
    """Writes the relay (Write Request, on a link that may write it) and checks the output took it:
    `gattway status` shows the output sensor's new level (an output reports the level it drove
    its line to; a line it could not drive is logged as `driving output failed`) and the
    characteristic reads it back."""
    await client.write_gatt_char(characteristic, bytes([level]), response=True)
    want = "true" if level else "false"
    shown = (await gattway.values())[STATUS_NAMES[RELAY]]
    check(shown == want, f"the relay was written {want}, gattway status shows {shown}")
    log = gattway.log()
    check("driving output failed" not in log and "output needs a boolean" not in log,
          f"gattway did not drive the relay:\n{log}")
    check(bytes(await client.read_gatt_char(characteristic)) == bytes([level]), f"the relay does not read back {want}")


async def paired_on_write(client: BleakClient, gattway: Gattway, phone: Phone) -> None:
    """A pairing window is open; the phone's link is new and unencrypted. Its Write Request to the
    relay gets gattway's Error Response, Insufficient Authentication (0x05, no bond): BlueZ
    (src/shared/att.c, change_security) does not hand that error to bleak but raises the link's
    security (BT_SECURITY medium), so the kernel pairs (Just Works: BlueZ initiates, with the
    NoInputNoOutput agent's IO capability, bonding since the adapter is pairable), and then BlueZ
    sends the same Write Request again, once, which gattway now accepts: what a phone app that just
    writes does. Checked on the air (btmon): refused on the unencrypted link, then pairing,
    encryption, and only then written; and in gattway's status: the relay flipped."""
    since = len(gattway.log())
    central = await gattway.central(phone)
    check(central["security"] == "none" and not central["bonded"], f"the link is already secure: {central}")
    level = (await gattway.values())[STATUS_NAMES[RELAY]] != "true"  # the opposite of the relay's
    value_handle = client.services.get_characteristic(RELAY).handle + 1  # BlueZ's handle is the declaration's
    mark = len(btmon_frames(phone.btmon))
    try:
        await client.write_gatt_char(RELAY, bytes([level]), response=True)
    except BleakError as error:
        raise Failure(f"the relay's Write Request before pairing failed ({type(error).__name__}: {error}); "
                      "BlueZ was expected to pair on the Insufficient Authentication error and retry it")
    await asyncio.sleep(0.5)  # btmon's record of the retry's Write Response
    events = protected_write_on_air(btmon_frames(phone.btmon)[mark:], value_handle)
    refused = [event for event in events if event.startswith("refused")]
    check(refused == ["refused: Insufficient Authentication (0x05)"],
          f"gattway's answers to the Write Request before pairing: {events}")
    order = [events.index(event) if event in events else -1 for event in (refused[0], "pairing", "encrypted", "written")]
    check(-1 not in order and order == sorted(order),
          f"on the air: {events}; expected the refusal, then pairing, encryption and the write accepted")
    await gattway.wait_for("paired with", 20, since)
    await gattway.wait_for(", bonded)", 20, since)
    central = await gattway.central(phone)
    check(central["security"] != "none" and central["bonded"], f"after pairing gattway shows the link {central}")
    want = "true" if level else "false"
    shown = (await gattway.values())[STATUS_NAMES[RELAY]]
    check(shown == want, f"the relay written {want} after pairing, gattway status shows {shown}")
    check(bytes(await client.read_gatt_char(RELAY)) == bytes([level]), f"the relay does not read back {want}")
    step(f"window open: the second phone's relay Write Request refused ({refused[0][9:]}), BlueZ paired by itself "
         f"(Just Works), encrypted and wrote again: accepted, the relay {'on' if level else 'off'} "
         f"({' → '.join(events)})")


@contextlib.asynccontextmanager
async def connected(target, phone: Phone):
    """A bleak client on `phone`'s adapter for one link that may end in a refused pairing: BlueZ
    then removes the device (it was never bonded), D-Bus object and all, so there is nothing left
    to disconnect; the link itself ends with gattway's restart (see main)."""
    client = BleakClient(target, timeout=30, bluez=phone.bluez)
    await client.connect()
    try:
        yield client
    finally:
        try:
            await client.disconnect()
        except BleakDBusError as error:
            if error.dbus_error != "org.freedesktop.DBus.Error.UnknownObject":
                raise


async def write_refused(client: BleakClient, gattway: Gattway, phone: Phone) -> str:
    """Outside the pairing window, a Write Request to the relay on an unencrypted link: gattway
    answers Insufficient Authentication (0x05), BlueZ pairs on it (see paired_on_write),
    gattway answers the Pairing Request with Pairing Failed, Pairing Not Supported (0x05), logged
    and counted; the relay keeps its level (gattway status), and on the air there is no encryption
    and no Write Response. BlueZ 5.66 then removes the device and never answers bleak's write, so
    the write is given up 5 s after gattway's refusal. Returns what bleak saw."""
    since, refusals = len(gattway.log()), gattway.refusals()
    before = (await gattway.values())[STATUS_NAMES[RELAY]]
    value_handle = client.services.get_characteristic(RELAY).handle + 1
    mark = len(btmon_frames(phone.btmon))
    write = asyncio.ensure_future(
        client.write_gatt_char(RELAY, b"\x00" if before == "true" else b"\x01", response=True))
    try:
        await gattway.wait_for(REFUSED, 20, since)
    except Failure as failure:
        accepted = write.done() and write.exception() is None
        paired = "paired with" in gattway.log()[since:]
        raise Failure(f"{failure}; {phone.adapter}'s write {'was accepted' if accepted else 'is unanswered'}, "
                      f"gattway {'paired with it' if paired else 'did not pair'}, outside the window") from None
    done, _ = await asyncio.wait({write}, timeout=5)
    if write in done:
        error = write.exception()
        check(error is not None, f"{phone.adapter}'s Write Request to the relay was accepted outside the pairing window")
        seen = f"the write failed: {type(error).__name__}: {error}"
    else:
        write.cancel()
        with contextlib.suppress(asyncio.CancelledError, BleakError):
            await write
        seen = "BlueZ left the write unanswered"
    events = protected_write_on_air(btmon_frames(phone.btmon)[mark:], value_handle)
    check(events[:3] == ["refused: Insufficient Authentication (0x05)", "pairing",
                         "pairing refused: pairing not supported (0x05)"]
          and "encrypted" not in events and "written" not in events,
          f"on the air: {events}; expected the write refused, a Pairing Request refused with Pairing Not "
          "Supported, no encryption and no write")
    check(gattway.refusals() == refusals + 1, f"gattway refused {gattway.refusals() - refusals} pairings, expected 1")
    after = (await gattway.values())[STATUS_NAMES[RELAY]]
    check(after == before, f"the relay was {before} before the refused write, gattway status shows {after}")
    return seen


async def pair_refused(gattway: Gattway, phone: Phone, target) -> str:
    """Outside the pairing window, bleak's pair() (BlueZ's Device1.Pair, Just Works through the
    NoInputNoOutput agent): gattway answers the Pairing Request with Pairing Failed, Pairing Not
    Supported (0x05), logged and counted; pair() raises. Returns bleak's error."""
    since, refusals = len(gattway.log()), gattway.refusals()
    mark = len(btmon_frames(phone.btmon))
    async with connected(target, phone) as client:
        try:
            await asyncio.wait_for(client.pair(), 30)
        except BleakError as error:
            failure = f"{type(error).__name__}: {error}"
        except asyncio.TimeoutError:
            raise Failure(f"bleak's pair() on {phone.adapter} had no answer within 30 s")
        else:
            raise Failure(f"bleak's pair() on {phone.adapter} succeeded outside the pairing window "
                          f"(gattway: {'paired with it' if 'paired with' in gattway.log()[since:] else 'no pairing'})")
    await gattway.wait_for(REFUSED, 20, since)
    events = protected_write_on_air(btmon_frames(phone.btmon)[mark:], -1)
    check(events[:2] == ["pairing", "pairing refused: pairing not supported (0x05)"] and "encrypted" not in events,
          f"on the air: {events}; expected a Pairing Request refused with Pairing Not Supported, no encryption")
    check(gattway.refusals() == refusals + 1, f"gattway refused {gattway.refusals() - refusals} pairings, expected 1")
    return failure


async def open_window(gattway: Gattway, length: str) -> None:
    """`gattway pair --for <length>`; its answer names the window (and the refusals since the start)."""
    opened = await gattway.command("pair", "--for", length)
    refusals = gattway.refusals()
    counted = f"; {refusals} pairings refused since the start" in opened if refusals else "refused" not in opened
    check(opened.startswith("pairing window open for ") and counted,
          f"gattway pair answered '{opened}', expected the window open and {refusals} refusals")
    check((await gattway.status())["pairing"]["open"], "gattway status shows the window closed after gattway pair")


async def close_window(gattway: Gattway) -> None:
    closed = await gattway.command("pair", "--close")
    check(closed.startswith("pairing window closed"), f"gattway pair --close answered '{closed}'")
    await gattway.wait_for("pairing window closed", 10)
    check(not (await gattway.status())["pairing"]["open"], "gattway status shows the window open after --close")


async def first_session(gattway: Gattway, phone: Phone) -> tuple[str, dict[str, int]]:
    """The first phone, the pairing window closed: everything an unbonded phone may do, then the
    relay's write refused with its pairing. Returns gattway's address and the handles."""
    found = await BleakScanner.find_device_by_filter(
        lambda device, advertisement: advertisement.local_name == NAME and SERVICE in advertisement.service_uuids,
        timeout=30, bluez=phone.bluez)
    check(found is not None, f"no advertisement with local name {NAME} and service {SERVICE} within 30 s")
    step(f"scan: {found.address} advertises '{NAME}' with {SERVICE}")
    pairing = (await gattway.status())["pairing"]
    check(pairing["policy"] == "window" and not pairing["open"], f"gattway status shows the pairing window {pairing}")
    async with connected(found, phone) as client:
        chars = await characteristics(client)
        check(set(chars) == LAYOUT_A, f"discovered {sorted(chars)}")
        check(client.services.get_service("00001801-0000-1000-8000-00805f9b34fb") is not None, "no GATT service")
        step(f"connect and discover: {len(chars)} characteristics")
        await read_all(client, gattway, {STATIC: b"gattway", RETIRED: b"retired", WRITABLE: WRITABLE_INITIAL,
                                         PROTECTED: PROTECTED_INITIAL, RELAY: b"\x00"})
        step("read every readable characteristic, each its own value")
        notified = await received(client, COUNTER, 3, 20)
        check(notified == sorted(notified) and len(set(notified)) == 3, f"notified counts {notified}")
        indicated = await received(client, INDICATED, 2, 20)
        step(f"notifications {notified} and indications {indicated}")
        await client.write_gatt_char(WRITABLE, b"\x01\x02\x03", response=True)
        check(bytes(await client.read_gatt_char(WRITABLE)) == b"\x01\x02\x03", "Write Request not read back")
        await client.write_gatt_char(WRITABLE, b"\x04\x05", response=False)
        await asyncio.sleep(0.5)
        check(bytes(await client.read_gatt_char(WRITABLE)) == b"\x04\x05", "Write Command not read back")
        step("Write Request and Write Command read back")
        await client.write_gatt_char(RELAY, b"\x01", response=False)
        await asyncio.sleep(1)
        shown = (await gattway.values())[STATUS_NAMES[RELAY]]
        check(shown == "false", f"a Write Command on an unencrypted link drove the relay (gattway status: {shown})")
        step("window closed: a Write Command to the relay on the unencrypted link is dropped")
        seen = await write_refused(client, gattway, phone)
        address, handles = client.address, {uuid_: c.handle for uuid_, c in chars.items()}
    step(f"window closed: the relay's Write Request refused (Insufficient Authentication), BlueZ's pairing on it "
         f"refused (Pairing Not Supported), the relay stays off ({seen})")
    return address, handles


async def paired_in_window(gattway: Gattway, phone: Phone, address: str) -> None:
    """`gattway pair --for 2m`: bleak's pair() pairs Just Works and bonds; the relay and the other
    protected characteristic are written; then `gattway pair --close`."""
    await open_window(gattway, "2m")
    since = len(gattway.log())
    manager = await get_global_bluez_manager()
    async with BleakClient(address, timeout=30, bluez=phone.bluez) as client:
        await client.pair()
        check(manager.is_paired(client._backend._device_path), "BlueZ does not show the device paired")
        await gattway.wait_for("paired with", 20, since)
        await gattway.wait_for(", bonded)", 20, since)
        central = await gattway.central(phone)
        check(central["security"] != "none" and central["bonded"], f"after pairing gattway shows the link {central}")
        await drive_relay(client, gattway, True)
        await drive_relay(client, gattway, False)
        await client.write_gatt_char(PROTECTED, b"\xAA", response=True)
        check(bytes(await client.read_gatt_char(PROTECTED)) == b"\xAA", "the protected write was not read back")
    check(gattway.log().count("paired with") == 1, f"paired more than once:\n{gattway.log()}")
    step("gattway pair --for 2m: bleak's pair() paired Just Works, bonded; the relay driven on and off and the "
         "protected characteristic written")
    await close_window(gattway)
    step("gattway pair --close: the window closed")


async def scan(phone: Phone):
    found = await BleakScanner.find_device_by_filter(
        lambda device, advertisement: advertisement.local_name == NAME, timeout=30, bluez=phone.bluez)
    check(found is not None, f"{phone.adapter} saw no advertisement with local name {NAME} within 30 s")
    return found


async def bonded_reconnection(gattway: Gattway, address: str, phone: Phone) -> None:
    """gattway restarted with the same layout and bonds, the pairing window closed: BlueZ encrypts
    with the bond's key and keeps its attribute cache; the writes that need a bonded link work
    without pairing again."""
    check(not (await gattway.status())["pairing"]["open"], "the pairing window is open after a restart with bonds")
    before = att_requests(phone.btmon, DISCOVERY)
    async with BleakClient(address, timeout=30, bluez=phone.bluez) as client:
        await gattway.wait_for(", bonded)", 20)
        await client.write_gatt_char(PROTECTED, b"\xBB", response=True)
        await drive_relay(client, gattway, True)
        await read_all(client, gattway, {STATIC: b"gattway", RETIRED: b"retired", WRITABLE: WRITABLE_INITIAL,
                                         PROTECTED: b"\xBB", RELAY: b"\x01"})
        log = gattway.log()
        check("is bonded" in log, "gattway did not recognise the bonded central")
        check("paired with" not in log, f"paired again:\n{log}")
        rediscovered = att_requests(phone.btmon, DISCOVERY) - before
        check(rediscovered == 0, f"BlueZ discovered the unchanged layout again ({rediscovered} requests)")
        step("reconnected bonded after a restart, the pairing window closed: encrypted with the bond's key, no pairing, no discovery; "
             "the relay driven and the protected characteristic written, every value reads right")


async def cached_session(address: str, gattway: Gattway, phone: Phone) -> tuple[bool, dict[str, int]]:
    """Connects to gattway running layout B, waits for BlueZ to show it, reads every value (each
    its own: the written ones from their initial values, the relay off, the counters in their
    ranges), gets notifications of every notifying characteristic, drives the relay on the bonded
    link through its handle as BlueZ now knows it; returns whether bleak's first copy of the
    services (BlueZ's cache) was already right, and the characteristics' handles."""
    async with BleakClient(address, timeout=30, bluez=phone.bluez) as client:
        first = set(await characteristics(client))
        chars = await settled_layout(client, LAYOUT_B)
        await read_all(client, gattway, {STATIC: b"gattway", WRITABLE: WRITABLE_INITIAL, PROTECTED: PROTECTED_INITIAL,
                                         RELAY: b"\x00"}, chars)
        for notifying in (COUNTER, ADDED):
            await received(client, chars[notifying], 2, 20)
        await drive_relay(client, gattway, True, chars[RELAY])
        return first == LAYOUT_B, {uuid_: c.handle for uuid_, c in chars.items()}


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gattway", required=True)
    parser.add_argument("--hci", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--adapter", required=True, help="the first phone's adapter (hci0)")
    parser.add_argument("--btmon", required=True, help="btmon's record of the first phone's adapter")
    parser.add_argument("--second-adapter", required=True, help="the second phone's adapter")
    parser.add_argument("--second-btmon", required=True)
    args = parser.parse_args()
    gattway = Gattway(args.gattway, args.hci, args.workdir)
    phone, second = Phone(args.adapter, args.btmon), Phone(args.second_adapter, args.second_btmon)
    bus = await prepare_adapters([phone, second])
    try:
        # A link whose pairing was refused stays up after BlueZ removed the device (Linux 6.1 keeps
        # it; BlueZ can no longer disconnect it), and a link just bonded sometimes stays up after
        # BlueZ's Disconnect (then connecting again fails with EBUSY): every such link ends with a
        # restart of gattway, which keeps its bonds, its address (the virtual controller's
        # --host-address) and, with bonds or first_start_window 0s, a closed window.
        await gattway.start(changed=False)
        address, handles_a = await first_session(gattway, phone)
        gattway.stop()

        await gattway.start(changed=False)
        failure = await pair_refused(gattway, phone, address)
        step(f"window closed: bleak's pair() refused (Pairing Not Supported): {failure}")
        gattway.stop()

        await gattway.start(changed=False)
        await paired_in_window(gattway, phone, address)
        failure = await pair_refused(gattway, second, await scan(second))
        step(f"after the window: a second new phone ({second.adapter}, {second.address}): bleak's pair() refused "
             f"(Pairing Not Supported): {failure}")
        gattway.stop()

        await gattway.start(changed=False)
        await bonded_reconnection(gattway, address, phone)
        await open_window(gattway, "1m")
        async with BleakClient(await scan(second), timeout=30, bluez=second.bluez) as client:
            await paired_on_write(client, gattway, second)
        gattway.stop()

        await gattway.start(changed=True)
        before = att_requests(phone.btmon, DISCOVERY)
        cache_was_right, handles_b = await cached_session(address, gattway, phone)
        rediscovered = att_requests(phone.btmon, DISCOVERY) - before
        check(rediscovered > 0, "the changed layout was not discovered again")
        shifted = sorted(uuid_ for uuid_ in handles_a.keys() & handles_b.keys() if handles_a[uuid_] != handles_b[uuid_])
        check({COUNTER, INDICATED, WRITABLE, PROTECTED, RELAY} <= set(shifted),
              f"handles that moved: {shifted} (layout A {handles_a}, B {handles_b})")
        step(f"changed layout: BlueZ discovered again ({rediscovered} Read By Group Type requests; it first "
             f"reported {'the new' if cache_was_right else 'its cached'} layout), then showed the added "
             f"characteristic and not the removed one; {len(shifted)} characteristics moved "
             f"(the relay 0x{handles_a[RELAY]:04x} → 0x{handles_b[RELAY]:04x}), each read its own value, "
             "both counters notified, the relay driven through its new handle")
        gattway.stop()

        await gattway.start(changed=True)
        before = att_requests(phone.btmon, DISCOVERY)
        cache_was_right, handles = await cached_session(address, gattway, phone)
        rediscovered = att_requests(phone.btmon, DISCOVERY) - before
        check(rediscovered == 0, f"the unchanged layout was discovered again ({rediscovered} requests)")
        check(cache_was_right, "BlueZ first reported another layout from its cache")
        check(handles == handles_b, f"handles {handles}, expected {handles_b}")
        step("unchanged layout: BlueZ used its cache (no Read By Group Type request); each characteristic "
             "reads its own value and the relay is driven")
        gattway.stop()
    except (Failure, BleakError, asyncio.TimeoutError) as error:
        print(f"[bluez-central] FAILED: {type(error).__name__}: {error}", flush=True)
        if gattway.process and gattway.process.poll() is None:
            gattway.process.terminate()
        return 1
    finally:
        bus.disconnect()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
