#!/usr/bin/env python3
"""The reference peripheral for the event-cost benchmark: a Bumble GATT server that serves one
bool characteristic (read, notify) and changes it `rate` times a second, notifying subscribers
each time, like gattway serving a binary sensor on a line that changes `rate` times a second.

  bumble_notifier.py tcp:HOST:PORT|unix:PATH NAME RATE [SOCKET]

With SOCKET, the levels come from outside as they do for gattway's socket-driven line: it binds
a Unix datagram socket there and applies each datagram's "0"/"1" bytes (a descriptor wakes it);
without, its own timer toggles the value.

Connects to the virtual controller, advertises NAME and the service UUID, prints "ready".
"""

from __future__ import annotations

import asyncio
import socket
import sys
import time

from bumble import hci
from bumble.device import Device
from bumble.gatt import Characteristic, Service
from bumble.transport import open_transport

from bench_support import advertise

SERVICE_UUID = "6E400001-B5A3-F393-E0A9-E50E24DC0001"
VALUE_UUID = "6E400002-B5A3-F393-E0A9-E50E24DC0001"


async def toggle(device: Device, characteristic: Characteristic, rate: float) -> None:
    """Changes the value every 1/rate s on a steady schedule (late ticks catch up, like edges
    that queued while the process was descheduled) and notifies each change."""
    period, level = 1.0 / rate, 0
    due = time.monotonic()
    while True:
        due += period
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        level ^= 1
        characteristic.value = bytes([level])
        await device.notify_subscribers(characteristic)


async def follow(device: Device, characteristic: Characteristic, path: str) -> None:
    """Applies the levels datagrams on `path` carry, notifying each change."""
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    receiver.setblocking(False)
    loop = asyncio.get_running_loop()
    while True:
        datagram = await loop.sock_recv(receiver, 256)
        for byte in datagram:
            if byte in b"01" and characteristic.value != bytes([byte - ord("0")]):
                characteristic.value = bytes([byte - ord("0")])
                await device.notify_subscribers(characteristic)


async def main() -> None:
    if len(sys.argv) not in (4, 5) or not sys.argv[1].startswith(("tcp:", "unix:")):
        sys.exit("usage: bumble_notifier.py tcp:HOST:PORT|unix:PATH NAME RATE [SOCKET]")
    name, rate = sys.argv[2], float(sys.argv[3])
    # gattway's spelling of a transport in Bumble's (its "unix:" is already a client).
    spec = "tcp-client:" + sys.argv[1][4:] if sys.argv[1].startswith("tcp:") else sys.argv[1]
    async with await open_transport(spec) as transport:
        device = Device.with_hci(name, hci.Address("F0:F1:F2:F3:F4:F6"), transport.source, transport.sink)
        characteristic = Characteristic(
            VALUE_UUID, Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
            Characteristic.Permissions.READABLE, bytes([0]))
        device.add_service(Service(SERVICE_UUID, [characteristic]))
        await device.power_on()
        await advertise(device, name, SERVICE_UUID)
        print("ready", flush=True)
        if len(sys.argv) == 5:
            await follow(device, characteristic, sys.argv[4])
        else:
            await toggle(device, characteristic, rate)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
