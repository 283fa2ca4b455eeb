#!/usr/bin/env python3
"""A scriptable phone: a Bumble central that tests drive with JSON lines.

Started with the virtual controller's address (tcp:HOST:PORT or unix:PATH), it reads one JSON
command per line on stdin and answers each with exactly one JSON line on stdout:
{"ok": true, ...results} or {"ok": false, "error": "..."}. Logs go to stderr.

Commands ("cmd" plus arguments; handles are integers, values are hex strings):
  scan        name?, uuid?, timeout=5   -> address, name, uuids, adv_data, scan_response
  connect     address, timeout=5        -> handle
  mtu         mtu=517                   -> mtu
  discover                              -> services: [{uuid, start, end, characteristics:
                                           [{uuid, handle, value_handle, properties, descriptors:
                                           [{uuid, handle}]}]}]
  read        handle, long=true         -> value
  write       handle, value, response=true   (long values use prepared writes)
  prepare     handle, offset, value     (one Prepare Write Request, no execute) -> value echoed
  execute     commit=true               (Execute Write Request)
  subscribe   handle (value handle), indicate=false
  notifications count, timeout=5, handle?  -> values: [{handle, value, indication}], others: [handle]
                                        (with handle: only that handle's values count; the
                                        handles of the others, taken off the queue, in others)
  signal      hex (raw LE signaling PDU on CID 5), timeout=2 -> replies: [hex]
  smp         hex (raw SMP PDU on CID 6), timeout=2          -> replies: [hex]
              (from then on SMP PDUs go to the test, not to Bumble's Security Manager)
  pair        io="no_input_no_output", mitm=true, bonding=true, sc=true, wait=true, timeout=20
              -> encrypted, authenticated (wait=false: starts pairing and answers at once;
              collect the result with "pairing"). A failure answers smp_error (the reason).
              Numeric Comparison: the phone's user accepts, and the result has the number
              the phone showed (compared).
  passkey     value (int; null cancels) -> the passkey the user types for the pairing under way
  pairing     timeout=20                -> the result of the pairing started with wait=false
  encrypt     timeout=10                -> encrypted, authenticated: starts encryption with the
              key stored by an earlier pairing (Bumble's in-memory key store lives as long as the
              phone process, so a phone reconnecting keeps its keys)
  security                              -> encrypted, authenticated, bonded, security_requests
              (Security Requests received; like a phone, this one answers each by encrypting
              when it has keys for the peripheral, and leaves pairing to the test)
  listen      handle (value handle)     -> receive notifications and indications of handle
              without writing its CCCD (a bonded reconnection whose subscription was restored)
  disconnect
  quit
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import signal
import sys

from bumble import att, hci
from bumble.core import UUID, PhysicalTransport, ProtocolError
from bumble.device import Device, Peer
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

log = logging.getLogger("phone")


def parse_ad(data: bytes) -> list[tuple[int, bytes]]:
    fields, offset = [], 0
    while offset < len(data):
        length = data[offset]
        if length == 0 or offset + 1 + length > len(data):
            break
        fields.append((data[offset + 1], data[offset + 2:offset + 1 + length]))
        offset += 1 + length
    return fields


def describe_ad(adv: bytes, scan_response: bytes) -> dict:
    name, uuids = None, []
    for ad_type, value in parse_ad(adv) + parse_ad(scan_response):
        if ad_type in (0x08, 0x09):
            if name is None or ad_type == 0x09:
                name = value.decode("utf-8", "replace")
        elif ad_type in (0x02, 0x03):
            uuids += [UUID.from_bytes(value[i:i + 2]).to_hex_str("-") for i in range(0, len(value), 2)]
        elif ad_type in (0x04, 0x05):
            uuids += [UUID.from_bytes(value[i:i + 4]).to_hex_str("-") for i in range(0, len(value), 4)]
        elif ad_type in (0x06, 0x07):
            uuids += [UUID.from_bytes(value[i:i + 16]).to_hex_str("-") for i in range(0, len(value), 16)]
    return {"name": name, "uuids": uuids, "adv_data": adv.hex(), "scan_response": scan_response.hex()}


class PairingFailed(Exception):
    def __init__(self, reason: int):
        super().__init__(f"pairing failed: SMP reason 0x{reason:02x}")
        self.reason = reason


def same_uuid(text: str, other: str) -> bool:
    return UUID(text) == UUID(other)


IO_CAPABILITIES = {
    "no_input_no_output": PairingDelegate.NO_OUTPUT_NO_INPUT,
    "keyboard_only": PairingDelegate.KEYBOARD_INPUT_ONLY,
    "display_only": PairingDelegate.DISPLAY_OUTPUT_ONLY,
    "display_yes_no": PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT,
    "keyboard_display": PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT,
}


class TestDelegate(PairingDelegate):
    """The user at the phone: types the passkey the test hands over with "passkey"."""

    def __init__(self, phone: "Phone", io_capability):
        super().__init__(io_capability=io_capability)
        self.phone = phone

    async def get_number(self):
        return await self.phone.passkey

    async def compare_numbers(self, number, digits):
        # The user at the phone says yes; the test checks the number against gattway's.
        self.phone.compared = number
        return True


class Phone:
    def __init__(self, device: Device):
        self.device = device
        self.connection = None
        self.peer: Peer | None = None
        self.updates: asyncio.Queue = asyncio.Queue()
        self.signaling: asyncio.Queue = asyncio.Queue()
        self.smp: asyncio.Queue = asyncio.Queue()
        self.raw_smp = False
        self.passkey: asyncio.Future | None = None
        self.compared: int | None = None
        self.security_requests = 0
        # On every connection from its first moment: a peripheral's Security Request can arrive
        # right behind the connection, before `device.connect` returns to `connect` below (a
        # listener added there missed it now and then, and the phone then never encrypted).
        device.on(device.EVENT_CONNECTION, self.on_connection)
        # Value handles `listen` gave, listened to on every later connection too.
        self.listened: set[int] = set()
        self.pairing_task: asyncio.Task | None = None
        self.characteristics = {}
        manager = device.l2cap_channel_manager
        original_l2cap = manager.on_pdu

        def on_l2cap_pdu(connection, cid, pdu):
            if cid == 5:
                self.signaling.put_nowait(bytes(pdu))
            original_l2cap(connection, cid, pdu)
        manager.on_pdu = on_l2cap_pdu

        original_smp = device.smp_manager.on_smp_pdu

        def on_smp_pdu(connection, pdu):
            if self.raw_smp:
                self.smp.put_nowait(bytes(pdu))
            else:
                original_smp(connection, pdu)
        device.smp_manager.on_smp_pdu = on_smp_pdu

    async def scan(self, name=None, uuid=None, timeout=5.0):
        found = asyncio.get_running_loop().create_future()
        adv_data: dict[str, bytes] = {}
        responses: dict[str, bytes] = {}

        def on_report(report):
            # Raw reports: Bumble's own accumulator merges scan responses and loses which
            # bytes came in which packet, and the tests check exactly that.
            key = str(report.address)
            if isinstance(report, hci.HCI_LE_Advertising_Report_Event.Report):
                is_scan_response = report.event_type == 0x04  # SCAN_RSP
            else:
                is_scan_response = bool(report.event_type & 0x08)  # extended: scan response bit
            if is_scan_response:
                responses[key] = bytes(report.data)
            else:
                adv_data[key] = bytes(report.data)
            if key not in adv_data or key not in responses:
                return
            info = describe_ad(adv_data[key], responses[key])
            if name is not None and info["name"] != name:
                return
            if uuid is not None and not any(same_uuid(uuid, u) for u in info["uuids"]):
                return
            if not found.done():
                found.set_result({"address": key, **info})

        self.device.host.on("advertising_report", on_report)
        await self.device.start_scanning(active=True, filter_duplicates=False)
        try:
            return await asyncio.wait_for(found, timeout)
        finally:
            self.device.host.remove_listener("advertising_report", on_report)
            await self.device.stop_scanning()

    async def connect(self, address, timeout=5.0):
        self.connection = await self.device.connect(
            hci.Address(address), transport=PhysicalTransport.LE, timeout=timeout)
        self.peer = Peer(self.connection)
        return {"handle": self.connection.handle}

    async def private_address(self):
        # As a phone with privacy does between connections: a new resolvable private address
        # from the IRK it distributed when pairing (Core Vol 6 Part B 1.3.2.2), set in the
        # controller (Bumble's own update_rpa sends the old address) and used by the next connect.
        address = hci.Address.generate_private_address(self.device.irk)
        await self.device.send_sync_command(hci.HCI_LE_Set_Random_Address_Command(random_address=address))
        self.device.random_address = address
        return {"address": str(address), "irk": self.device.irk.hex()}

    def on_connection(self, connection):
        connection.on(connection.EVENT_SECURITY_REQUEST, lambda _: self.on_security_request(connection))
        # From the connection's first moment as well: a bonded phone's Service Changed indication
        # comes as soon as the link is encrypted, before a command could listen again.
        for handle in self.listened:
            self.add_listener(connection.gatt_client, handle)

    def on_security_request(self, connection):
        # As a phone does: a peripheral it has keys for gets encryption with them. Without keys a
        # phone would ask its user to pair; this one leaves pairing to the test.
        self.security_requests += 1
        asyncio.get_running_loop().create_task(self.encrypt_if_bonded(connection))

    async def encrypt_if_bonded(self, connection):
        keys = await self.device.keystore.get(str(connection.peer_address))
        if keys is not None and keys.ltk is not None and not connection.is_encrypted:
            await connection.encrypt()

    async def mtu(self, mtu=517):
        return {"mtu": await self.peer.request_mtu(mtu)}

    async def discover(self):
        services = []
        for service in await self.peer.discover_services():
            entry = {"uuid": service.uuid.to_hex_str("-"), "start": service.handle, "end": service.end_group_handle,
                     "characteristics": []}
            for characteristic in await service.discover_characteristics():
                descriptors = await characteristic.discover_descriptors()
                self.characteristics[characteristic.handle] = characteristic
                entry["characteristics"].append({
                    "uuid": characteristic.uuid.to_hex_str("-"), "handle": characteristic.definition_handle
                    if hasattr(characteristic, "definition_handle") else characteristic.handle - 1,
                    "value_handle": characteristic.handle, "properties": int(characteristic.properties),
                    "descriptors": [{"uuid": d.type.to_hex_str("-"), "handle": d.handle} for d in descriptors]})
            services.append(entry)
        return {"services": services}

    async def read(self, handle, long=True):
        value = await self.peer.gatt_client.read_value(handle, no_long_read=not long)
        return {"value": bytes(value).hex()}

    async def write(self, handle, value, response=True):
        await self.peer.gatt_client.write_value(handle, bytes.fromhex(value), with_response=response)
        return {}

    async def prepare(self, handle, offset, value):
        response = await self.peer.gatt_client.send_request(att.ATT_Prepare_Write_Request(
            attribute_handle=handle, value_offset=offset, part_attribute_value=bytes.fromhex(value)))
        if response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
            raise att.ATT_Error(error_code=response.error_code, message=response)
        return {"value": bytes(response.part_attribute_value).hex()}

    async def execute(self, commit=True):
        response = await self.peer.gatt_client.send_request(
            att.ATT_Execute_Write_Request(flags=1 if commit else 0))
        if response.op_code == att.Opcode.ATT_ERROR_RESPONSE:
            raise att.ATT_Error(error_code=response.error_code, message=response)
        return {}

    async def subscribe(self, handle, indicate=False):
        characteristic = self.characteristics.get(handle)
        if characteristic is None:
            raise ValueError(f"characteristic with value handle {handle} not discovered")

        def on_value(value, handle=handle, indicate=indicate):
            self.updates.put_nowait({"handle": handle, "value": bytes(value).hex(),
                                           "indication": indicate})
        await self.peer.gatt_client.subscribe(characteristic, on_value, prefer_notify=not indicate)
        return {}

    async def notifications(self, count, timeout=5.0, handle=None):
        values, others = [], set()
        try:
            async with asyncio.timeout(timeout):
                while len(values) < count:
                    update = await self.updates.get()
                    if handle is None or update["handle"] == handle:
                        values.append(update)
                    else:
                        others.add(update["handle"])
        except TimeoutError:
            pass
        return {"values": values, "others": sorted(others)}

    async def raw(self, cid, queue, hex_bytes, timeout):
        while not queue.empty():
            queue.get_nowait()
        self.device.send_l2cap_pdu(self.connection.handle, cid, bytes.fromhex(hex_bytes))
        replies = []
        try:
            async with asyncio.timeout(timeout):
                replies.append((await queue.get()).hex())
        except TimeoutError:
            pass
        return {"replies": replies}

    async def signal(self, hex, timeout=2.0):
        return await self.raw(5, self.signaling, hex, timeout)

    async def smp_pdu(self, hex, timeout=2.0):
        self.raw_smp = True
        return await self.raw(6, self.smp, hex, timeout)

    async def security(self):
        # Bumble's connection.authenticated is set by any LE pairing; MITM protection is a
        # property of the stored key.
        keys = await self.device.keystore.get(str(self.connection.peer_address))
        ltk = keys.ltk if keys is not None else None
        return {"encrypted": bool(self.connection.is_encrypted),
                "authenticated": bool(ltk is not None and ltk.authenticated),
                "bonded": keys is not None, "security_requests": self.security_requests}

    async def run_pairing(self):
        try:
            await self.connection.pair()
        except ProtocolError as error:
            if error.error_namespace == "smp":
                raise PairingFailed(int(error.error_code)) from error
            raise
        return await self.security()

    async def pair(self, io="no_input_no_output", mitm=True, bonding=True, sc=True, wait=True, timeout=20.0):
        self.passkey = asyncio.get_running_loop().create_future()
        self.compared = None
        delegate = TestDelegate(self, IO_CAPABILITIES[io])
        # The phone's identity is the static random address it connects from, so a reconnection
        # from that address finds its bond (a real phone connects with a resolvable private
        # address that the IRK it distributed resolves).
        self.device.pairing_config_factory = lambda connection: PairingConfig(
            sc=sc, mitm=mitm, bonding=bonding, delegate=delegate,
            identity_address_type=PairingConfig.AddressType.RANDOM)
        self.pairing_task = asyncio.create_task(self.run_pairing())
        if not wait:
            return {}
        return await self.pairing(timeout)

    async def enter_passkey(self, value):
        self.passkey.set_result(value)
        return {}

    async def pairing(self, timeout=20.0):
        task, self.pairing_task = self.pairing_task, None
        if task is None:
            raise ValueError("no pairing started")
        result = await asyncio.wait_for(task, timeout)
        if self.compared is not None:
            result["compared"] = self.compared
        return result

    async def encrypt(self, timeout=10.0):
        await asyncio.wait_for(self.connection.encrypt(), timeout)
        return await self.security()

    async def listen(self, handle):
        # Kept for later connections, which listen from their first moment (`on_connection`).
        if handle not in self.listened:
            self.listened.add(handle)
            self.add_listener(self.peer.gatt_client, handle)
        return {}

    def add_listener(self, client, handle):
        def on_value(value, handle=handle):
            self.updates.put_nowait({"handle": handle, "value": bytes(value).hex(), "indication": False})
        client.notification_subscribers.setdefault(handle, set()).add(on_value)
        client.indication_subscribers.setdefault(handle, set()).add(on_value)

    async def disconnect(self):
        if self.connection is not None:
            await self.connection.disconnect()
            self.connection = None
        return {}


async def main() -> None:
    logging.basicConfig(level=os.environ.get("GATTWAY_PHONE_LOG", "WARNING").upper(), stream=sys.stderr,
                        format="%(asctime)s phone %(levelname)s %(message)s")
    if len(sys.argv) != 2:
        sys.exit("usage: phone.py tcp:HOST:PORT | unix:PATH")
    target = sys.argv[1]
    if target.startswith("tcp:"):
        spec = "tcp-client:" + target[4:]
    elif target.startswith("unix:"):
        spec = "unix:" + target[5:]
    else:
        sys.exit(f"unknown controller address {target}")
    async with await open_transport(spec) as transport:
        rng = random.Random(os.getpid())
        address = hci.Address(
            ":".join(f"{b:02X}" for b in [0xC0 | rng.randrange(64)] + [rng.randrange(256) for _ in range(5)]),
            hci.Address.RANDOM_DEVICE_ADDRESS)
        device = Device.with_hci("phone", address, transport.source, transport.sink)
        await device.power_on()
        phone = Phone(device)
        commands = {
            "scan": phone.scan, "connect": phone.connect, "mtu": phone.mtu, "discover": phone.discover,
            "read": phone.read, "write": phone.write, "prepare": phone.prepare,
            "execute": phone.execute, "subscribe": phone.subscribe,
            "notifications": phone.notifications, "signal": phone.signal, "smp": phone.smp_pdu,
            "pair": phone.pair, "passkey": phone.enter_passkey, "pairing": phone.pairing,
            "encrypt": phone.encrypt, "security": phone.security, "listen": phone.listen,
            "disconnect": phone.disconnect, "private_address": phone.private_address,
        }
        reader = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        print(json.dumps({"ok": True, "ready": True, "address": str(address)}), flush=True)
        while line := await reader.readline():
            try:
                request = json.loads(line)
                name = request.pop("cmd")
                if name == "quit":
                    print(json.dumps({"ok": True}), flush=True)
                    break
                result = await commands[name](**request)
                print(json.dumps({"ok": True, **(result or {})}), flush=True)
            except PairingFailed as error:
                print(json.dumps({"ok": False, "error": str(error), "smp_error": error.reason}), flush=True)
            except att.ATT_Error as error:
                print(json.dumps({"ok": False, "error": f"ATT error 0x{error.error_code:02x}",
                                  "att_error": error.error_code}), flush=True)
            except Exception as error:  # every request gets exactly one answer
                print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}), flush=True)


if __name__ == "__main__":
    # A parent whose thread blocks signals (Swift's Foundation.Process does) passes the mask on;
    # without this, SIGTERM would never arrive.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    asyncio.run(main())
