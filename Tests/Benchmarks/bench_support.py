"""What the Python benchmarks share: child processes, scanning for a peripheral by name, and the
reference peripherals' advertising. Imported by roundtrip.py, event_cost.py and the Bumble
peripherals beside them (Python puts the script's directory on the import path)."""

from __future__ import annotations

import asyncio
import os
import time

from bumble import hci
from bumble.core import UUID, AdvertisingData, PhysicalTransport
from bumble.device import Connection, Device, Peer


async def start_process(argv: list[str], log: str, ready: str | None = None,
                        env: dict[str, str] | None = None) -> tuple[asyncio.subprocess.Process, str]:
    """Starts a child (stderr to `log`); with `ready`, waits for its stdout line starting so and
    returns that line."""
    with open(log, "w") as stderr:
        process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE, stderr=stderr,
                                                       env=env)
    if ready is None:
        return process, ""
    async with asyncio.timeout(60):
        while True:
            line = (await process.stdout.readline()).decode()
            if not line:
                raise RuntimeError(f"{argv[0]} exited before it was ready (see {log})")
            if line.startswith(ready):
                return process, line.strip()


async def stop_process(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
        try:
            async with asyncio.timeout(5):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


async def scan_for(device: Device, name: str, timeout: float = 120.0) -> hci.Address:
    """The address of the first advertiser whose complete local name is `name`."""
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        if advertisement.data.get(AdvertisingData.COMPLETE_LOCAL_NAME) in (name, name.encode()):
            if not found.done():
                found.set_result(advertisement.address)

    device.on("advertisement", on_advertisement)
    await device.start_scanning(active=True, filter_duplicates=False)
    try:
        return await asyncio.wait_for(found, timeout)
    finally:
        device.remove_listener("advertisement", on_advertisement)
        await device.stop_scanning()


async def subscribe(device: Device, address: hci.Address, service_uuid: UUID, characteristic_uuid: UUID,
                    on_value) -> tuple[Connection, Peer, object]:
    """Connects to `address`, finds the characteristic and subscribes `on_value` to its
    notifications; returns the connection, the peer and the characteristic."""
    connection = await device.connect(address, transport=PhysicalTransport.LE, timeout=10)
    peer = Peer(connection)
    await peer.discover_services([service_uuid])
    service = peer.get_services_by_uuid(service_uuid)[0]
    await service.discover_characteristics([characteristic_uuid])
    characteristic = service.get_characteristics_by_uuid(characteristic_uuid)[0]
    await peer.subscribe(characteristic, on_value)
    return connection, peer, characteristic


async def advertise(device: Device, name: str, service_uuid: str) -> None:
    """Advertises the service UUID every 20 ms, the name in the scan response, as gattway's
    benchmark configurations do; restarts after each connection."""
    advertising = bytes(AdvertisingData([
        (AdvertisingData.FLAGS, bytes([0x06])),
        (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, bytes(UUID(service_uuid))),
    ]))
    scan_response = bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name.encode())]))
    await device.start_advertising(auto_restart=True, advertising_data=advertising,
                                   scan_response_data=scan_response,
                                   advertising_interval_min=20, advertising_interval_max=20)


class LineDriver:
    """Drives a line from outside, the way a GPIO edge reaches a process through a descriptor:
    a thread sends one datagram per level change ("1", "0", ...) `rate` times a second, on a
    steady schedule, to the Unix socket a simulated line (or the Bumble notifier) binds. Its own
    cost is this benchmark's, not the measured process's. `sent` counts the changes so far."""

    def __init__(self, path: str, rate: float):
        import socket
        import threading
        self.path, self.period, self.sent = path, 1.0 / rate, 0
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        import os
        import time
        while not os.path.exists(self.path) and not self._stop.wait(0.01):
            pass
        due = time.monotonic()
        while not self._stop.is_set():
            due += self.period
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            try:
                self._send(self.sent % 2 == 0)
            except OSError:  # the receiver went away (or is not there yet): try the next tick
                continue
            self.sent += 1

    def _send(self, level: bool) -> None:
        self._socket.sendto(b"1" if level else b"0", self.path)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()


class PayloadLineDriver(LineDriver):
    """The same schedule, for `mosquitto_pub -l`: one line per change written to `pipe` (its
    standard input), the JSON payload gattway publishes for a binary value, each a message."""

    def __init__(self, pipe: int, rate: float):
        super().__init__(os.devnull, rate)
        self.pipe = pipe

    def _send(self, level: bool) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
        os.write(self.pipe, f'{{"value":{"true" if level else "false"},"ts":"{stamp}.000Z"}}\n'.encode())
