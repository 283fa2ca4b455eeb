#!/usr/bin/env python3
"""Checks that virtual_controller.py patches Bumble's gaps, by speaking raw HCI to it.

Starts a virtual controller, connects two raw H4 hosts (A advertises, B scans and connects) and
checks each patched behaviour with byte-level expectations. Prints one line per check and exits
non-zero when any fails. Run by BluetoothHostTests (HarnessSelfTests) and usable on its own.
"""

from __future__ import annotations

import asyncio
import os
import signal
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


class RawHost:
    """One H4 connection: sends commands, collects events and ACL packets."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.packets: asyncio.Queue = asyncio.Queue()
        self.task = asyncio.create_task(self.read_loop())

    async def read_loop(self):
        buffer = b""
        while data := await self.reader.read(65536):
            buffer += data
            while buffer:
                kind = buffer[0]
                if kind == 0x04 and len(buffer) >= 3 and len(buffer) >= 3 + buffer[2]:
                    size = 3 + buffer[2]
                elif kind == 0x02 and len(buffer) >= 5:
                    size = 5 + (buffer[3] | buffer[4] << 8)
                    if len(buffer) < size:
                        break
                else:
                    break
                self.packets.put_nowait(buffer[:size])
                buffer = buffer[size:]

    def send(self, raw: bytes):
        self.writer.write(raw)

    async def command(self, opcode: int, parameters: bytes = b"") -> bytes:
        """Sends a command; returns its Command Complete parameters or Command Status status."""
        self.send(struct.pack("<BHB", 0x01, opcode, len(parameters)) + parameters)
        return await self.wait(lambda p: p[0] == 0x04 and p[1] in (0x0E, 0x0F) and
                               struct.unpack_from("<H", p, 4 if p[1] == 0x0E else 5)[0] == opcode)

    async def wait(self, match, timeout=2.0) -> bytes:
        async with asyncio.timeout(timeout):
            while True:
                packet = await self.packets.get()
                if match(packet):
                    return packet

    def drain(self):
        while not self.packets.empty():
            self.packets.get_nowait()


def meta(subevent):
    return lambda p: p[0] == 0x04 and p[1] == 0x3E and p[3] == subevent


FAILURES = []


def check(name, condition, detail=""):
    print(("ok   " if condition else "FAIL ") + name + ("" if condition else f": {detail}"))
    if not condition:
        FAILURES.append(name)


async def main():
    process = await asyncio.create_subprocess_exec(
        sys.executable, os.path.join(HERE, "virtual_controller.py"), "--tcp-port", "0",
        "--exit-with-stdin", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    line = (await process.stdout.readline()).decode()
    port = int(line.split("tcp=")[1].split()[0])
    a = RawHost(*await asyncio.open_connection("127.0.0.1", port))
    b = RawHost(*await asyncio.open_connection("127.0.0.1", port))
    try:
        await run_checks(a, b)
    finally:
        process.stdin.close()
        await process.wait()


async def run_checks(a: RawHost, b: RawHost):
    for host in (a, b):
        await host.command(0x0C03)
        await host.command(0x0C01, struct.pack("<Q", 0x3FFFFFFFFFFFFFFF))
        await host.command(0x2001, struct.pack("<Q", 0xFFFFF))
    address_a = (await a.command(0x1009))[7:13]
    address_b = (await b.command(0x1009))[7:13]
    check("distinct non-zero public addresses", address_a != address_b and any(address_a),
          f"{address_a.hex()} {address_b.hex()}")

    # A advertises ADV_IND every 20 ms with a scan response; B scans actively.
    await a.command(0x2006, struct.pack("<HHBBB6sBB", 0x20, 0x20, 0, 0, 0, bytes(6), 7, 0))
    await a.command(0x2008, bytes([3, 2, 1, 6]) + bytes(28))
    response = bytes([5, 9]) + b"abcd"
    await a.command(0x2009, bytes([len(response)]) + response + bytes(31 - len(response)))
    await a.command(0x200A, b"\x01")
    await b.command(0x200B, struct.pack("<BHHBB", 1, 0x10, 0x10, 1, 0))
    await b.command(0x200C, b"\x01\x00")
    report = await b.wait(lambda p: meta(0x02)(p) and p[5] == 0x04)
    length = report[13]
    check("scan response reaches the scanner", report[14:14 + length] == response, report.hex())

    # Reset stops A's advertising.
    await a.command(0x0C03)
    await asyncio.sleep(0.1)
    b.drain()
    await asyncio.sleep(0.3)
    reports = 0
    while not b.packets.empty():
        reports += meta(0x02)(b.packets.get_nowait())
    check("reset stops advertising", reports == 0, f"{reports} reports after reset")

    # Advertise again and connect B to A.
    await a.command(0x0C01, struct.pack("<Q", 0x3FFFFFFFFFFFFFFF))
    await a.command(0x2001, struct.pack("<Q", 0xFFFFF))
    await a.command(0x2006, struct.pack("<HHBBB6sBB", 0x20, 0x20, 0, 0, 0, bytes(6), 7, 0))
    await a.command(0x200A, b"\x01")
    await b.command(0x200C, b"\x00\x00")
    await b.command(0x2005, bytes([1, 2, 3, 4, 5, 0xC5]))
    await b.command(0x200D, struct.pack("<HHBB6sBHHHHHH", 0x10, 0x10, 0, 0, address_a, 1,
                                        24, 24, 0, 500, 0, 0))
    connected_a = await a.wait(meta(0x01))
    connected_b = await b.wait(meta(0x01))
    handle_a = struct.unpack_from("<H", connected_a, 5)[0]
    handle_b = struct.unpack_from("<H", connected_b, 5)[0]
    check("connection", connected_a[4] == 0 and connected_b[4] == 0)

    status = await a.command(0x2022, struct.pack("<HHH", handle_a, 251, 2120))
    change_a = await a.wait(meta(0x07))
    change_b = await b.wait(meta(0x07))
    check("LE Set Data Length completes and both ends see Data Length Change",
          status[6] == 0 and struct.unpack_from("<H", change_a, 6)[0] == 251
          and struct.unpack_from("<H", change_b, 10)[0] == 251, f"{change_a.hex()} {change_b.hex()}")

    status = await a.command(0x2032, struct.pack("<HBBBH", handle_a, 0, 2, 2, 0))
    phy_a = await a.wait(meta(0x0C))
    phy_b = await b.wait(meta(0x0C))
    check("LE Set PHY gets Command Status and PHY Update Complete on both ends",
          status[3] == 0 and phy_a[7:9] == b"\x02\x02" and phy_b[7:9] == b"\x02\x02",
          f"{phy_a.hex()} {phy_b.hex()}")

    status = await a.command(0x041D, struct.pack("<H", handle_a))
    version = await a.wait(lambda p: p[0] == 0x04 and p[1] == 0x0C)
    check("Read Remote Version Information answered", status[3] == 0 and version[3] == 0, version.hex())

    key = bytes(reversed(bytes.fromhex("4C68384139F574D836BCF34E9DFB01BF")))
    plaintext = bytes(reversed(bytes.fromhex("0213243546576879acbdcedfe0f10213")))
    encrypted = await a.command(0x2017, key + plaintext)
    check("LE Encrypt matches the Core spec sample (Vol 6 Part C 1)",
          bytes(reversed(encrypted[7:23])).hex() == "99ad1b5226a37e3e058e3b8e27c2c666", encrypted.hex())

    status = await a.command(0x2025)
    key_event = await a.wait(meta(0x08))
    check("LE Read Local P-256 Public Key answered", status[3] == 0 and key_event[4] == 0
          and len(key_event) == 5 + 64, key_event.hex())

    # Controller -> host ACL is fragmented to the 27-byte buffer length.
    frame = struct.pack("<HH", 100, 4) + bytes(range(100))
    for offset in range(0, len(frame), 27):
        flags = 0 if offset == 0 else 1
        chunk = frame[offset:offset + 27]
        b.send(struct.pack("<BHH", 0x02, handle_b | flags << 12, len(chunk)) + chunk)
    fragments = []
    while sum(len(f) - 5 for f in fragments) < len(frame):
        fragments.append(await a.wait(lambda p: p[0] == 0x02))
    check("controller->host ACL fragmented to the buffer length",
          all(len(f) - 5 <= 27 for f in fragments) and b"".join(f[5:] for f in fragments) == frame
          and len(fragments) == 4, [len(f) for f in fragments])

    # Credits are enforced: an oversized fragment, then nine fragments into eight buffers.
    await asyncio.sleep(0.1)
    b.drain()
    b.send(struct.pack("<BHH", 0x02, handle_b, 40) + struct.pack("<HH", 36, 4) + bytes(36))
    overflow = await b.wait(lambda p: p[0] == 0x04 and p[1] == 0x1A)
    check("a fragment longer than the buffer is a Data Buffer Overflow", overflow[3] == 0x01, overflow.hex())
    burst = b"".join(struct.pack("<BHH", 0x02, handle_b, 5) + struct.pack("<HH", 1, 4) + b"x"
                     for _ in range(9))
    b.send(burst)
    overflow = await b.wait(lambda p: p[0] == 0x04 and p[1] == 0x1A)
    check("more fragments than buffers is a Data Buffer Overflow", overflow[3] == 0x01, overflow.hex())


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    asyncio.run(main())
    sys.exit(1 if FAILURES else 0)
