#!/usr/bin/env python3
"""BlueZ as the central: bleak through bluetoothd drives the `gattway` executable.

Runs inside bluez-central-guest.sh's VM, where the system D-Bus, bluetoothd (on the kernel
adapter that virtual_controller.py --vhci attached) and btmon already run. gattway reaches the
same virtual link through the controller's Unix socket. Every step prints one line; the first
failed check ends the run with exit status 1.

  bluez_central.py --gattway PATH --hci unix:PATH --workdir DIR --btmon FILE

Steps: scan (local name and service UUID), connect, discover, read every readable
characteristic, notifications and indications, Write Request and Write Command, Just Works
pairing through a NoInputNoOutput agent, the write that needs a bonded link, a bonded
reconnection without pairing again; then the attribute cache: gattway restarted with a
changed layout (one characteristic removed, one added) and again unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time

from bleak import BleakClient, BleakScanner
from bleak.backends.bluezdbus.manager import get_global_bluez_manager
from bleak.exc import BleakError
from dbus_fast import BusType, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method

NAME = "bluez-e2e"


def uuid(suffix: str) -> str:
    return f"6e400001-b5a3-f393-e0a9-e50e24dc{suffix.lower()}"


SERVICE = uuid("B2E0")
STATIC = uuid("B2E1")  # "gattway", in both layouts
RETIRED = uuid("B2E2")  # only in the first layout, before the counter (handles shift)
COUNTER = uuid("B2E3")  # pulses, notified
INDICATED = uuid("B2E4")  # pulses, indicated
WRITABLE = uuid("B2E5")  # open: request and command
PROTECTED = uuid("B2E6")  # default write permission: encrypted and bonded
ADDED = uuid("B2E7")  # only in the second layout: pulses, notified


def layout(changed: bool, state_dir: str) -> str:
    retired = "" if changed else f"""
      - {{uuid: {RETIRED}, name: retired, format: utf8, source: {{static: retired}}}}"""
    # The added characteristic notifies (a CCCD more), so the service's handle range grows:
    # BlueZ 5.66 keeps a cached service whose range did not move, whatever the Database Hash says.
    added = f"""
      - {{uuid: {ADDED}, name: added, format: uint32, properties: [read, notify], source: {{sensor: pulses}}}}""" \
        if changed else ""
    return f"""device: {{name: {NAME}}}
bluetooth:
  advertising: {{local_name: {NAME}, service_uuids: [{SERVICE}], interval: 20ms}}
gpio:
  backend: simulated
  chips:
    - label: bluez
      lines:
        - name: PULSES
          generator: {{type: pulses, rate: 2}}
sensors:
  - {{id: pulses, kind: counter, line: PULSES}}
services:
  - uuid: {SERVICE}
    name: bluez
    characteristics:
      - {{uuid: {STATIC}, name: static, format: utf8, source: {{static: gattway}}}}{retired}
      - {{uuid: {COUNTER}, name: counter, format: uint32, properties: [read, notify], source: {{sensor: pulses}}}}
      - {{uuid: {INDICATED}, name: indicated, format: uint32, properties: [read, indicate], source: {{sensor: pulses}}}}
      - uuid: {WRITABLE}
        name: writable
        format: bytes
        properties: [read, write, write_without_response]
        permissions: {{write: open}}
        source: {{written: "00"}}
      - {{uuid: {PROTECTED}, name: protected, format: bytes, properties: [read, write], source: {{written: "00"}}}}{added}
state_dir: {state_dir}
"""


class Failure(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Failure(what)


def step(text: str) -> None:
    print(f"[bluez-central] ok: {text}", flush=True)


class Gattway:
    """`gattway run` as a child; its log in a file, read for lines."""

    def __init__(self, executable: str, hci: str, workdir: str):
        self.executable, self.hci, self.workdir = executable, hci, workdir
        self.process: subprocess.Popen | None = None
        self.runs = 0
        self.log_path = ""

    async def start(self, changed: bool) -> None:
        self.runs += 1
        config = os.path.join(self.workdir, f"gattway-{self.runs}.yaml")
        with open(config, "w") as file:
            file.write(layout(changed, os.path.join(self.workdir, "state")))
        self.log_path = os.path.join(self.workdir, f"gattway-{self.runs}.log")
        self.process = subprocess.Popen(
            [self.executable, "run", "--config", config, "--hci", self.hci, "--log-level", "info"],
            stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        await self.wait_for("gattway: advertising\n", 60)

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


async def prepare_adapter() -> MessageBus:
    bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
    bus.export("/gattway/agent", JustWorksAgent())
    introspection = await bus.introspect("org.bluez", "/org/bluez")
    manager = bus.get_proxy_object("org.bluez", "/org/bluez", introspection).get_interface("org.bluez.AgentManager1")
    await manager.call_register_agent("/gattway/agent", "NoInputNoOutput")
    await manager.call_request_default_agent("/gattway/agent")
    introspection = await bus.introspect("org.bluez", "/org/bluez/hci0")
    properties = bus.get_proxy_object("org.bluez", "/org/bluez/hci0", introspection).get_interface(
        "org.freedesktop.DBus.Properties")
    await properties.call_set("org.bluez.Adapter1", "Powered", Variant("b", True))
    await properties.call_set("org.bluez.Adapter1", "Pairable", Variant("b", True))
    return bus


def att_requests(btmon_file: str, name: str) -> int:
    """How many ATT PDUs called `name` btmon recorded so far."""
    text = subprocess.run(["btmon", "-r", btmon_file], capture_output=True, text=True, timeout=60).stdout
    return text.count(name)


DISCOVERY = "ATT: Read By Group Type Request"
LAYOUT_B = {STATIC, COUNTER, INDICATED, WRITABLE, PROTECTED, ADDED}


async def characteristics(client: BleakClient) -> dict[str, object]:
    service = client.services.get_service(SERVICE)
    check(service is not None, f"service {SERVICE} not discovered")
    return {c.uuid: c for c in service.characteristics}


async def received(client: BleakClient, uuid_, count: int, timeout: float) -> list[int]:
    """`count` values of `uuid_` (a UUID or BlueZ's characteristic) after subscribing."""
    values: list[int] = []
    done = asyncio.Event()

    def on_value(_, data: bytearray) -> None:
        values.append(int.from_bytes(data, "little"))
        if len(values) >= count:
            done.set()

    await client.start_notify(uuid_, on_value)
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        raise Failure(f"{len(values)} of {count} values of {getattr(uuid_, 'uuid', uuid_)} within {timeout} s")
    finally:
        await client.stop_notify(uuid_)
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


async def read_all(client: BleakClient, expected: dict[str, bytes], chars: dict[str, object] | None = None) -> None:
    chars = chars or await characteristics(client)
    for uuid_, characteristic in chars.items():
        if "read" not in characteristic.properties:
            continue
        value = bytes(await client.read_gatt_char(characteristic))
        if uuid_ in expected:
            check(value == expected[uuid_], f"{uuid_} read {value!r}, expected {expected[uuid_]!r}")
        elif uuid_ in (COUNTER, INDICATED, ADDED):
            check(len(value) == 4, f"{uuid_} read {value.hex()}, expected a uint32")


async def first_session(gattway: Gattway) -> str:
    found = await BleakScanner.find_device_by_filter(
        lambda device, advertisement: advertisement.local_name == NAME and SERVICE in advertisement.service_uuids,
        timeout=30)
    check(found is not None, f"no advertisement with local name {NAME} and service {SERVICE} within 30 s")
    step(f"scan: {found.address} advertises '{NAME}' with {SERVICE}")
    async with BleakClient(found, timeout=30) as client:
        chars = await characteristics(client)
        check(set(chars) == {STATIC, RETIRED, COUNTER, INDICATED, WRITABLE, PROTECTED},
              f"discovered {sorted(chars)}")
        check(client.services.get_service("00001801-0000-1000-8000-00805f9b34fb") is not None, "no GATT service")
        step(f"connect and discover: {len(chars)} characteristics")
        await read_all(client, {STATIC: b"gattway", RETIRED: b"retired", WRITABLE: b"\x00", PROTECTED: b"\x00"})
        step("read every readable characteristic")
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
        await client.pair()
        await gattway.wait_for("paired with", 20)
        await gattway.wait_for(", bonded)", 20)
        await client.write_gatt_char(PROTECTED, b"\xAA", response=True)
        check(bytes(await client.read_gatt_char(PROTECTED)) == b"\xAA", "the protected write was not read back")
        step("paired Just Works, bonded; the protected characteristic written")
        return client.address


async def bonded_reconnection(gattway: Gattway, address: str, btmon: str) -> None:
    """gattway restarted with the same layout and bonds: BlueZ encrypts with the bond's key and
    keeps its attribute cache; the write that needs a bonded link works without pairing again."""
    before = att_requests(btmon, DISCOVERY)
    async with BleakClient(address, timeout=30) as client:
        await gattway.wait_for(", bonded)", 20)
        await client.write_gatt_char(PROTECTED, b"\xBB", response=True)
        check(bytes(await client.read_gatt_char(PROTECTED)) == b"\xBB", "the protected write after reconnecting")
        await read_all(client, {STATIC: b"gattway", RETIRED: b"retired"})
        log = gattway.log()
        check("is bonded" in log, "gattway did not recognise the bonded central")
        check("paired with" not in log, f"paired again:\n{log}")
        rediscovered = att_requests(btmon, DISCOVERY) - before
        check(rediscovered == 0, f"BlueZ discovered the unchanged layout again ({rediscovered} requests)")
        step("reconnected bonded after a restart: encrypted with the bond's key, no pairing, no discovery; "
             "the protected write works and every value reads right")


async def cached_session(address: str, expected_uuids: set[str], expected: dict[str, bytes]) -> bool:
    """Connects, waits for BlueZ to show `expected_uuids`, reads every value and gets
    notifications of every notifying characteristic; true when bleak's first copy of the
    services (BlueZ's cache) was already right."""
    async with BleakClient(address, timeout=30) as client:
        first = set(await characteristics(client))
        chars = await settled_layout(client, expected_uuids)
        await read_all(client, expected, chars)
        for notifying in sorted(expected_uuids & {COUNTER, ADDED}):
            notified = await received(client, chars[notifying], 2, 20)
            check(len(notified) >= 2, f"notified {notified} on {notifying}")
        return first == expected_uuids


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gattway", required=True)
    parser.add_argument("--hci", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--btmon", required=True)
    args = parser.parse_args()
    gattway = Gattway(args.gattway, args.hci, args.workdir)
    bus = await prepare_adapter()
    try:
        await gattway.start(changed=False)
        address = await first_session(gattway)
        # The link ends with gattway's restart: after pairing, the kernel (6.1) sometimes answers
        # BlueZ's Disconnect without taking the link down, and connecting again then fails (EBUSY).
        # The virtual controller keeps gattway's address across restarts, as an adapter does.
        gattway.stop()

        await gattway.start(changed=False)
        await bonded_reconnection(gattway, address, args.btmon)
        gattway.stop()

        await gattway.start(changed=True)
        before = att_requests(args.btmon, DISCOVERY)
        cache_was_right = await cached_session(address, LAYOUT_B, {STATIC: b"gattway"})
        rediscovered = att_requests(args.btmon, DISCOVERY) - before
        check(rediscovered > 0, "the changed layout was not discovered again")
        step(f"changed layout: BlueZ discovered again ({rediscovered} Read By Group Type requests; it first "
             f"reported {'the new' if cache_was_right else 'its cached'} layout), then showed the added "
             "characteristic and not the removed one, read the right values and got notifications of both")
        gattway.stop()

        await gattway.start(changed=True)
        before = att_requests(args.btmon, DISCOVERY)
        cache_was_right = await cached_session(address, LAYOUT_B, {STATIC: b"gattway"})
        rediscovered = att_requests(args.btmon, DISCOVERY) - before
        check(rediscovered == 0, f"the unchanged layout was discovered again ({rediscovered} requests)")
        check(cache_was_right, "BlueZ first reported another layout from its cache")
        step("unchanged layout: BlueZ used its cache (no Read By Group Type request) and reads the right values")
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
