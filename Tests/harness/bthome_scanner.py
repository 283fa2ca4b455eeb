#!/usr/bin/env python3
"""A Home Assistant-like BTHome receiver: a Bumble scanner that scans passively, as Home
Assistant's Bluetooth integration does (no scan requests, so no scan responses), and hands each
advertisement carrying BTHome service data (UUID 0xFCD2) to bthome-ble, the parser Home
Assistant's BTHome integration uses, one parser per advertiser as Home Assistant keeps one per
device.

Started with the virtual controller's address (tcp:HOST:PORT or unix:PATH) and optionally
--bindkey HEX; prints {"ready": true} and then one JSON line on stdout for each advertisement the
parser accepted (a new packet: bthome-ble drops repeated packet ids and falling counters).
With --decode ADDRESS instead, it takes BTHome service data (hex, after the UUID) from each
--packet option, in order, as advertisements of ADDRESS, and answers each with one JSON line: the
fields below for an accepted packet, {"accepted": false} otherwise. The fields:
  accepted (true), address, adv_data (hex), packet_id, encrypted, counter (null unless encrypted),
  bindkey_verified, sensors {key: value}, binary_sensors {key: value}, events {key: type},
  scan_responses (how many scan responses this scanner got: passive, so 0)
Logs go to stderr (GATTWAY_SCANNER_LOG=debug shows bthome-ble's reasons for dropping one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import signal
import sys
import time

from bluetooth_data_tools import parse_advertisement_data_bytes
from bthome_ble import BTHomeBluetoothDeviceData
from bthome_ble.parser import EncryptionScheme
from bumble import hci
from bumble.device import Device
from bumble.transport import open_transport
from habluetooth import BluetoothServiceInfoBleak

BTHOME_UUID = "0000fcd2-0000-1000-8000-00805f9b34fb"


class Receiver:
    def __init__(self, bindkey: bytes | None, answer_every_packet: bool = False):
        self.bindkey = bindkey
        # Decoding answers every line; scanning reports only what the parser accepted.
        self.answer_every_packet = answer_every_packet
        self.parsers: dict[str, BTHomeBluetoothDeviceData] = {}
        self.scan_responses = 0

    def on_report(self, report) -> None:
        if isinstance(report, hci.HCI_LE_Advertising_Report_Event.Report):
            is_scan_response = report.event_type == 0x04  # SCAN_RSP
        else:
            is_scan_response = bool(report.event_type & 0x08)  # extended: scan response bit
        if is_scan_response:
            self.scan_responses += 1
            return
        data = bytes(report.data)
        name, service_uuids, service_data, manufacturer_data, tx_power = parse_advertisement_data_bytes(data)
        if BTHOME_UUID not in service_data:
            return
        # The address as Home Assistant writes it (most significant byte first, no type suffix):
        # bthome-ble builds the decryption nonce from it.
        address = str(report.address).split("/")[0].upper()
        parser = self.parsers.setdefault(address, BTHomeBluetoothDeviceData(bindkey=self.bindkey))
        info = BluetoothServiceInfoBleak(
            name=name or address, address=address, rssi=report.rssi, manufacturer_data=manufacturer_data,
            service_data=service_data, service_uuids=service_uuids, source="bumble", device=None,
            advertisement=None, connectable=True, time=time.monotonic(), tx_power=tx_power, raw=data)
        self.emit(parser, parser.update(info), info, data)

    def emit(self, parser, update, info, data: bytes) -> None:
        if parser.last_service_info is not info:
            if self.answer_every_packet:
                print(json.dumps({"accepted": False}), flush=True)
            return  # dropped: a repeated packet, or one it could not decrypt
        encrypted = parser.encryption_scheme == EncryptionScheme.BTHOME_BINDKEY
        print(json.dumps({
            "accepted": True, "address": info.address, "adv_data": data.hex(), "packet_id": parser.packet_id,
            "encrypted": encrypted, "counter": parser.encryption_counter if encrypted else None,
            "bindkey_verified": parser.bindkey_verified,
            "sensors": {key.key: value.native_value for key, value in update.entity_values.items()},
            "binary_sensors": {key.key: value.native_value for key, value in update.binary_entity_values.items()},
            "events": {key.key: event.event_type for key, event in update.events.items()},
            "scan_responses": self.scan_responses,
        }), flush=True)

    def decode(self, address: str, service_data: bytes) -> None:
        """One packet of `address` as the only field of an advertisement."""
        field = bytes([len(service_data) + 3, 0x16, 0xD2, 0xFC]) + service_data
        parser = self.parsers.setdefault(address, BTHomeBluetoothDeviceData(bindkey=self.bindkey))
        info = BluetoothServiceInfoBleak(
            name=address, address=address, rssi=-50, manufacturer_data={},
            service_data={BTHOME_UUID: service_data}, service_uuids=[], source="decode", device=None,
            advertisement=None, connectable=True, time=time.monotonic(), tx_power=None, raw=field)
        self.emit(parser, parser.update(info), info, field)


async def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("controller", nargs="?", help="tcp:HOST:PORT or unix:PATH")
    arguments.add_argument("--bindkey", help="the BTHome bind key, 32 hex digits")
    arguments.add_argument("--decode", metavar="ADDRESS", help="decode the --packet service data as ADDRESS's")
    arguments.add_argument("--packet", action="append", default=[], metavar="HEX", help="service data to decode")
    options = arguments.parse_args()
    logging.basicConfig(level=os.environ.get("GATTWAY_SCANNER_LOG", "WARNING").upper(), stream=sys.stderr,
                        format="%(asctime)s scanner %(levelname)s %(name)s %(message)s")
    receiver = Receiver(bytes.fromhex(options.bindkey) if options.bindkey else None,
                        answer_every_packet=options.decode is not None)
    if options.decode:
        for packet in options.packet:
            receiver.decode(options.decode, bytes.fromhex(packet))
        return
    target = options.controller
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
        device = Device.with_hci("scanner", address, transport.source, transport.sink)
        await device.power_on()
        device.host.on("advertising_report", receiver.on_report)
        await device.start_scanning(active=False, filter_duplicates=False)
        print(json.dumps({"ready": True}), flush=True)
        # Until stdin closes (the test ends) or a signal.
        reader = asyncio.StreamReader()
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while await reader.readline():
            pass


if __name__ == "__main__":
    # A parent whose thread blocks signals (Swift's Foundation.Process does) passes the mask on.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    asyncio.run(main())
