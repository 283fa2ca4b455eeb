#!/usr/bin/env python3
"""The reference echo peripheral: a Bumble GATT server with the same service as gattway's
EchoPeripheral (every value written to the echo characteristic is notified back).

  bumble_echo.py tcp:HOST:PORT NAME

Connects to the virtual controller, advertises NAME and the service UUID, prints "ready".
"""

from __future__ import annotations

import asyncio
import sys

from bumble import hci
from bumble.device import Device
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.transport import open_transport

from bench_support import advertise

SERVICE_UUID = "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"
ECHO_UUID = "6E400002-B5A3-F393-E0A9-E50E24DCCA9E"


async def main() -> None:
    if len(sys.argv) != 3 or not sys.argv[1].startswith("tcp:"):
        sys.exit("usage: bumble_echo.py tcp:HOST:PORT NAME")
    name = sys.argv[2]
    async with await open_transport("tcp-client:" + sys.argv[1][4:]) as transport:
        device = Device.with_hci(name, hci.Address("F0:F1:F2:F3:F4:F5"), transport.source, transport.sink)
        echo: Characteristic | None = None

        def on_write(connection, value):
            # Like gattway's echo task: the write is accepted at once, the notification follows.
            asyncio.get_running_loop().create_task(device.notify_subscribers(echo, bytes(value)))

        echo = Characteristic(
            ECHO_UUID,
            Characteristic.Properties.READ | Characteristic.Properties.WRITE
            | Characteristic.Properties.WRITE_WITHOUT_RESPONSE | Characteristic.Properties.NOTIFY,
            Characteristic.Permissions.READABLE | Characteristic.Permissions.WRITEABLE,
            CharacteristicValue(read=lambda connection: b"", write=on_write))
        device.add_service(Service(SERVICE_UUID, [echo]))
        await device.power_on()
        await advertise(device, name, SERVICE_UUID)
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
