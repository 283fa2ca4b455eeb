#!/usr/bin/env python3
"""gattway's virtual Bluetooth controller for tests.

Every host that connects (over TCP and/or a Unix socket, H4 framing) gets a fresh Bumble
controller with its own address; all of them share one Bumble LocalLink, so a gattway host and
the scriptable phones (phone.py, also connecting here) see each other as on one radio.

HarnessController patches the gaps of Bumble 0.0.236's virtual controller that matter to a
host under test:
  * HCI Reset resets (advertising, connections, addresses, masks, credits);
  * scan response data reaches scanners (Bumble reports the advertising data twice);
  * the advertising interval is read in 0.625 ms units (Bumble reads milliseconds);
  * LE Set PHY, LE Encrypt, LE Read Local P-256 Public Key and Read Remote Version Information
    get their replies (Bumble sends none);
  * LE Set Data Length works and reports LE Data Length Change on both ends;
  * controller->host ACL is fragmented to the controller's LE ACL buffer length;
  * host->controller credits are enforced: more fragments in flight than buffers, or a fragment
    longer than the buffer, is a Data Buffer Overflow (event 0x1A, fragment dropped, logged);
    Number Of Completed Packets comes after a short delay, as a real radio's would;
  * each controller has a distinct default public address (Bumble: 00:00:00:00:00:00).
HarnessLink fixes LocalLink's source address for LE ACL (it used the sender's random address
even when the connection runs on its public one).

Stalled centrals: with --exit-with-stdin, stdin also takes control lines "stall ADDRESS" and
"resume ADDRESS" (a phone's address). While a central is stalled, every controller holds the
Number Of Completed Packets of its connections to that central, as a radio would for a peer that
stops acknowledging: the host's credits for that connection stop returning. "resume" releases
them.

With --host-address, every host on a socket gets a controller with that public address, as an
adapter keeps its address when its host restarts (a central that bonded with it then finds it
again); one such host at a time.

With --vhci, one more controller on the same link is attached to the Linux kernel through
/dev/vhci (module hci_vhci): the kernel registers it as adapter hciN, which gattway then opens
through the HCI user channel, while phones reach the link over TCP or Unix as usual. Given twice,
two controllers are attached (two kernel adapters, as two phones for BlueZ).

Prints "READY tcp=<port> unix=<path> hci=<N>[,<N>]" on stdout once listening.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import struct
import sys

from bumble import hci, ll
from bumble.controller import Controller, LegacyAdvertiser
from bumble.core import PhysicalTransport
from bumble.link import LocalLink
from bumble.transport.common import PacketParser

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

log = logging.getLogger("virtual_controller")


def address_key(address) -> str:
    """An address as the control lines name it: upper case, without Bumble's /P suffix."""
    return str(address).split("/")[0].upper()


class HarnessLink(LocalLink):
    def __init__(self):
        super().__init__()
        self.stalled: set[str] = set()

    def set_stalled(self, address: str, stalled: bool) -> None:
        key = address_key(address)
        if stalled:
            self.stalled.add(key)
        else:
            self.stalled.discard(key)
            for controller in list(self.controllers):
                if isinstance(controller, HarnessController):
                    controller.release_held_completions()
        log.info("central %s %s", key, "stalled" if stalled else "resumed")

    def send_acl_data(self, sender_controller, destination_address, transport, data):
        if transport != PhysicalTransport.LE:
            return super().send_acl_data(sender_controller, destination_address, transport, data)
        destination = self.find_le_controller(destination_address)
        connection = sender_controller.le_connections.get(destination_address)
        source = connection.self_address if connection else sender_controller.random_address
        if destination is not None:
            asyncio.get_running_loop().call_soon(
                destination.on_link_acl_data, source, transport, data)


class HarnessLegacyAdvertiser(LegacyAdvertiser):
    def _on_timer_fired(self) -> None:
        self.send_advertising_data()
        interval = max(self.advertising_interval_min, 0x20) * 0.000625
        self.timer_handle = asyncio.get_running_loop().call_later(interval, self._on_timer_fired)


def raw_event(code: int, parameters: bytes) -> bytes:
    return bytes([hci.HCI_EVENT_PACKET, code, len(parameters)]) + parameters


def command_complete(opcode: int, return_parameters: bytes) -> bytes:
    return raw_event(0x0E, struct.pack("<BH", 1, opcode) + return_parameters)


def command_status(opcode: int, status: int = 0) -> bytes:
    return raw_event(0x0F, struct.pack("<BBH", status, 1, opcode))


class HarnessController(Controller):
    def __init__(self, name, link, public_address, acl_length, acl_count, credit_delay):
        super().__init__(name, link=link, public_address=public_address)
        self.default_public_address = self.public_address
        self.le_acl_data_packet_length = acl_length
        self.total_num_le_acl_data_packets = acl_count
        self.acl_data_packet_length = acl_length
        self.total_num_acl_data_packets = acl_count
        self.supported_max_tx_octets = 251
        self.supported_max_rx_octets = 251
        self.supported_max_tx_time = 2120
        self.supported_max_rx_time = 2120
        self.credit_delay = credit_delay
        self.in_flight = 0
        self.overflows = 0
        # Completions held for connections to stalled centrals: handles, one per fragment.
        self.held_completions: list[int] = []
        self.le_legacy_advertiser = HarnessLegacyAdvertiser(self)

    # Host -> controller ------------------------------------------------------------------
    def on_packet(self, packet: bytes) -> None:
        kind = packet[0]
        if kind == hci.HCI_COMMAND_PACKET and len(packet) >= 4:
            opcode = packet[1] | packet[2] << 8
            parameters = packet[4:]
            handler = self.PATCHED_COMMANDS.get(opcode)
            if handler is not None:
                handler(self, opcode, parameters)
                return
        if kind == hci.HCI_ACL_DATA_PACKET:
            self.on_host_acl(packet)
            return
        super().on_packet(packet)

    def send_raw(self, packet: bytes) -> None:
        if self.host:
            asyncio.get_running_loop().call_soon(self.host.on_packet, packet)

    def on_host_acl(self, packet: bytes) -> None:
        acl = hci.HCI_AclDataPacket.from_bytes(packet)
        if self.in_flight >= self.total_num_le_acl_data_packets or \
                len(acl.data) > self.le_acl_data_packet_length:
            self.overflows += 1
            log.error("[%s] credit violation: %d fragments in flight of %d buffers, fragment of %d bytes "
                      "(buffer %d); dropped", self.name, self.in_flight,
                      self.total_num_le_acl_data_packets, len(acl.data), self.le_acl_data_packet_length)
            self.send_raw(raw_event(0x1A, bytes([0x01])))
            return
        connection = self.find_connection_by_handle(acl.connection_handle)
        if connection is None:
            log.warning("[%s] ACL for unknown handle 0x%04X", self.name, acl.connection_handle)
            return
        self.in_flight += 1
        connection.assembler.feed_packet(acl)
        handle = acl.connection_handle
        asyncio.get_running_loop().call_later(self.credit_delay, self.complete_packet, handle)

    def complete_packet(self, handle: int) -> None:
        connection = self.find_connection_by_handle(handle)
        if connection is not None and address_key(connection.peer_address) in self.link.stalled:
            self.held_completions.append(handle)
            return
        self.in_flight = max(self.in_flight - 1, 0)
        if connection is None:
            return  # credits of a closed connection are implicit
        self.send_raw(raw_event(0x13, struct.pack("<BHH", 1, handle, 1)))

    def release_held_completions(self) -> None:
        held, self.held_completions = self.held_completions, []
        for handle in held:
            self.complete_packet(handle)

    # Controller -> host ACL, fragmented --------------------------------------------------
    def on_link_acl_data(self, sender_address, transport, data):
        connection = self.le_connections.get(sender_address) if transport == PhysicalTransport.LE \
            else self.classic_connections.get(sender_address)
        if connection is None:
            log.warning("[%s] no connection for %s", self.name, sender_address)
            return
        size = self.le_acl_data_packet_length
        for offset in range(0, len(data), size):
            chunk = data[offset:offset + size]
            flags = 0x2 if offset == 0 else 0x1
            header = struct.pack("<HH", connection.handle | flags << 12, len(chunk))
            self.send_raw(bytes([hci.HCI_ACL_DATA_PACKET]) + header + chunk)

    # Scanning: report the scan response data ---------------------------------------------
    def on_hci_le_set_extended_scan_parameters_command(self, command):
        # Bumble ignores the scan type here; remember it so active scanners get scan responses.
        self.extended_scanning = True
        self.le_scan_type = command.scan_types[0] if command.scan_types else 0
        return super().on_hci_le_set_extended_scan_parameters_command(command)

    def on_hci_le_set_scan_parameters_command(self, command):
        self.extended_scanning = False
        return super().on_hci_le_set_scan_parameters_command(command)

    def report(self, address, data: bytes, scan_response: bool) -> None:
        if getattr(self, "extended_scanning", False):
            # Legacy PDU event types in an extended report: ADV_IND 0x13, SCAN_RSP to it 0x1B.
            self.send_hci_packet(hci.HCI_LE_Extended_Advertising_Report_Event([
                hci.HCI_LE_Extended_Advertising_Report_Event.Report(
                    event_type=0x1B if scan_response else 0x13,
                    address_type=address.address_type, address=address,
                    primary_phy=hci.Phy.LE_1M, secondary_phy=0, advertising_sid=0xFF,
                    tx_power=0x7F, rssi=-50, periodic_advertising_interval=0,
                    direct_address_type=0, direct_address=hci.Address.ANY, data=data)]))
        else:
            kind = hci.HCI_LE_Advertising_Report_Event.EventType
            self.send_hci_packet(hci.HCI_LE_Advertising_Report_Event([
                hci.HCI_LE_Advertising_Report_Event.Report(
                    event_type=kind.SCAN_RSP if scan_response else kind.ADV_IND,
                    address_type=address.address_type, address=address, data=data, rssi=-50)]))

    def on_advertising_pdu(self, pdu) -> None:
        if not isinstance(pdu, (ll.AdvInd, ll.AdvExtInd)):
            return super().on_advertising_pdu(pdu)
        if self.le_scan_enable:
            address = pdu.advertiser_address
            self.report(address, bytes(pdu.data), scan_response=False)
            if self.le_scan_type == 1:
                self.report(address, self.scan_response_of(address), scan_response=True)
        pending = self.pending_le_connection
        if pending and pending.peer_address == pdu.advertiser_address:
            self.create_le_connection(pdu.advertiser_address)

    def scan_response_of(self, address) -> bytes:
        advertiser = self.link.find_le_controller(address)
        if advertiser is None:
            return b""
        legacy = advertiser.le_legacy_advertiser
        if legacy.enabled and legacy.address == address:
            return bytes(legacy.scan_response_data or b"")
        for advertising_set in advertiser.advertising_sets.values():
            if advertising_set.enabled and advertising_set.address == address:
                return bytes(advertising_set.scan_response_data)
        return b""

    # Patched commands --------------------------------------------------------------------
    def reset_command(self, opcode, parameters):
        self.le_legacy_advertiser.stop()
        self.le_legacy_advertiser = HarnessLegacyAdvertiser(self)
        for advertising_set in self.advertising_sets.values():
            advertising_set.stop()
        self.advertising_sets = {}
        self.drop_connections(hci.HCI_ErrorCode.CONNECTION_TIMEOUT_ERROR)
        self.le_scan_enable = False
        self.pending_le_connection = None
        self.event_mask = 0
        self.le_event_mask = 0
        self.in_flight = 0
        self.held_completions = []
        self._random_address = hci.Address("00:00:00:00:00:00")
        self.public_address = self.default_public_address
        self.send_raw(command_complete(opcode, bytes([0])))

    def drop_connections(self, reason: int) -> None:
        """Ends every LE connection as a peer would see a lost radio (supervision timeout)."""
        for connection in list(self.le_connections.values()):
            connection.send_ll_control_pdu(ll.TerminateInd(reason))
            self.le_connections.pop(connection.peer_address, None)

    def peer_of(self, handle: int):
        connection = self.find_le_connection_by_handle(handle)
        if connection is None:
            return None, None
        peer = self.link.find_le_controller(connection.peer_address)
        if peer is None:
            return connection, None
        return connection, peer.le_connections.get(connection.self_address) and peer

    def set_phy_command(self, opcode, parameters):
        handle, _, tx_phys, rx_phys = struct.unpack_from("<HBBB", parameters)
        connection, peer = self.peer_of(handle)
        if connection is None:
            self.send_raw(command_status(opcode, hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR))
            return
        self.send_raw(command_status(opcode))
        tx = 2 if tx_phys & 0b010 else 1
        rx = 2 if rx_phys & 0b010 else 1
        self.send_raw(raw_event(0x3E, struct.pack("<BBHBB", 0x0C, 0, handle, tx, rx)))
        if peer is not None:
            peer_connection = peer.le_connections[connection.self_address]
            peer.send_raw(raw_event(0x3E, struct.pack("<BBHBB", 0x0C, 0, peer_connection.handle, rx, tx)))

    def set_data_length_command(self, opcode, parameters):
        handle, tx_octets, tx_time = struct.unpack_from("<HHH", parameters)
        connection, peer = self.peer_of(handle)
        if connection is None:
            self.send_raw(command_complete(
                opcode, struct.pack("<BH", hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR, handle)))
            return
        self.send_raw(command_complete(opcode, struct.pack("<BH", 0, handle)))
        octets = min(tx_octets, self.supported_max_tx_octets)
        time = min(tx_time, self.supported_max_tx_time)
        self.send_raw(raw_event(0x3E, struct.pack("<BHHHHH", 0x07, handle, octets, time, 27, 328)))
        if peer is not None:
            peer_connection = peer.le_connections[connection.self_address]
            peer.send_raw(raw_event(0x3E, struct.pack("<BHHHHH", 0x07, peer_connection.handle,
                                                       27, 328, octets, time)))

    def encrypt_command(self, opcode, parameters):
        key, plaintext = parameters[:16], parameters[16:32]
        encryptor = Cipher(algorithms.AES(bytes(reversed(key))), modes.ECB()).encryptor()
        ciphertext = encryptor.update(bytes(reversed(plaintext))) + encryptor.finalize()
        self.send_raw(command_complete(opcode, bytes([0]) + bytes(reversed(ciphertext))))

    def read_local_p256_command(self, opcode, parameters):
        self.send_raw(command_status(opcode))
        numbers = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()
        x = numbers.x.to_bytes(32, "little")
        y = numbers.y.to_bytes(32, "little")
        self.send_raw(raw_event(0x3E, bytes([0x08, 0]) + x + y))

    def read_remote_version_command(self, opcode, parameters):
        (handle,) = struct.unpack_from("<H", parameters)
        connection, peer = self.peer_of(handle)
        if connection is None or peer is None:
            self.send_raw(command_status(opcode, hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR))
            return
        self.send_raw(command_status(opcode))
        self.send_raw(raw_event(0x0C, struct.pack("<BHBHH", 0, handle, peer.lmp_version,
                                                  peer.manufacturer_company_identifier,
                                                  peer.lmp_subversion)))

    PATCHED_COMMANDS = {
        0x0C03: reset_command,
        0x2032: set_phy_command,
        0x2022: set_data_length_command,
        0x2017: encrypt_command,
        0x2025: read_local_p256_command,
        0x041D: read_remote_version_command,
    }


class HostConnection:
    """One host on one socket, with its own controller."""

    def __init__(self, server: "VirtualControllerServer", reader, writer, index: int):
        self.reader = reader
        self.writer = writer
        address = server.host_address or server.address_for(index)
        self.controller = HarnessController(
            f"controller{index}", server.link, address, server.acl_length, server.acl_count,
            server.credit_delay)
        self.controller.host = self
        self.parser = PacketParser(self.controller)
        log.info("host %d connected; controller public address %s", index, address)

    def on_packet(self, packet: bytes) -> None:
        if not self.writer.is_closing():
            self.writer.write(packet)

    async def run(self) -> None:
        try:
            while data := await self.reader.read(65536):
                self.parser.feed_data(data)
        except (ConnectionError, OSError):
            pass
        finally:
            self.controller.le_legacy_advertiser.stop()
            for advertising_set in self.controller.advertising_sets.values():
                advertising_set.stop()
            self.controller.drop_connections(hci.HCI_ErrorCode.CONNECTION_TIMEOUT_ERROR)
            self.controller.link.remove_controller(self.controller)
            self.controller.host = None
            self.writer.close()
            log.info("%s gone; %d fragments were over credit", self.controller.name, self.controller.overflows)


class VhciConnection:
    """The kernel as a host: one controller behind /dev/vhci, one packet per read and write."""

    VENDOR_PACKET = 0xFF
    PRIMARY_CONTROLLER = 0x00

    def __init__(self, server: "VirtualControllerServer", path: str, index: int):
        self.fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        # Asking for a primary controller makes the kernel register it at once and answer with
        # the vendor packet FF <opcode> <adapter index, little endian>.
        os.write(self.fd, bytes([self.VENDOR_PACKET, self.PRIMARY_CONTROLLER]))
        reply = os.read(self.fd, 4)
        if len(reply) != 4 or reply[0] != self.VENDOR_PACKET:
            raise RuntimeError(f"{path} answered {reply.hex()} instead of the adapter index")
        self.adapter = reply[2] | reply[3] << 8
        os.set_blocking(self.fd, False)
        address = server.address_for(index)
        self.controller = HarnessController(
            f"controller{index}-vhci", server.link, address, server.acl_length, server.acl_count,
            server.credit_delay)
        self.controller.host = self
        self.parser = PacketParser(self.controller)
        asyncio.get_running_loop().add_reader(self.fd, self.on_readable)
        log.info("vhci: kernel adapter hci%d; controller public address %s", self.adapter, address)

    def on_readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        self.parser.feed_data(data)

    def on_packet(self, packet: bytes) -> None:
        os.write(self.fd, packet)


class VirtualControllerServer:
    def __init__(self, acl_length, acl_count, credit_delay, zero_public_address, host_address=None):
        self.link = HarnessLink()
        self.host_address = host_address
        self.acl_length = acl_length
        self.acl_count = acl_count
        self.credit_delay = credit_delay
        self.zero_public_address = zero_public_address
        self.count = 0
        self.connections: set[HostConnection] = set()

    def address_for(self, index: int) -> str:
        if self.zero_public_address:
            return "00:00:00:00:00:00"
        return f"F0:5A:00:{os.getpid() & 0xFF:02X}:{index >> 8 & 0xFF:02X}:{index & 0xFF:02X}"

    async def accept(self, reader, writer) -> None:
        self.count += 1
        if self.host_address is not None and self.connections:
            log.error("a second host connected while --host-address gives every host %s; refused",
                      self.host_address)
            writer.close()
            return
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family in (2, 10):
            import socket
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = HostConnection(self, reader, writer, self.count)
        self.connections.add(connection)
        try:
            await connection.run()
        finally:
            self.connections.discard(connection)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tcp-port", type=int, help="listen on 127.0.0.1:PORT (0: any free port)")
    parser.add_argument("--unix", help="listen on this Unix socket path")
    parser.add_argument("--acl-length", type=int, default=27, help="LE ACL buffer length")
    parser.add_argument("--acl-count", type=int, default=8, help="LE ACL buffers")
    parser.add_argument("--credit-delay-ms", type=float, default=1.0,
                        help="delay before a fragment's Number Of Completed Packets")
    parser.add_argument("--zero-public-address", action="store_true",
                        help="controllers report public address 00:00:00:00:00:00")
    parser.add_argument("--host-address", metavar="ADDRESS",
                        help="public address of the controller of every socket host (one at a time)")
    parser.add_argument("--exit-with-stdin", action="store_true",
                        help="exit when stdin closes (tests: the controller dies with its parent)")
    parser.add_argument("--vhci", metavar="PATH", action="append", default=[],
                        help="also attach a controller to the kernel through PATH (/dev/vhci); repeatable")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.tcp_port is None and args.unix is None:
        parser.error("give --tcp-port and/or --unix")

    server = VirtualControllerServer(args.acl_length, args.acl_count, args.credit_delay_ms / 1000.0,
                                     args.zero_public_address, args.host_address)
    listeners = []
    ready = []
    if args.tcp_port is not None:
        tcp = await asyncio.start_server(server.accept, "127.0.0.1", args.tcp_port, reuse_address=True)
        listeners.append(tcp)
        ready.append(f"tcp={tcp.sockets[0].getsockname()[1]}")
    if args.unix is not None:
        if os.path.exists(args.unix):
            os.unlink(args.unix)
        listeners.append(await asyncio.start_unix_server(server.accept, args.unix))
        ready.append(f"unix={args.unix}")
    kernel_adapters: list[VhciConnection] = []
    for path in args.vhci:
        server.count += 1
        kernel_adapters.append(VhciConnection(server, path, server.count))
    if kernel_adapters:
        ready.append("hci=" + ",".join(str(vhci.adapter) for vhci in kernel_adapters))
    print("READY " + " ".join(ready), flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    if args.exit_with_stdin:
        pending = bytearray()

        def on_stdin() -> None:
            data = sys.stdin.buffer.read1(4096)
            if not data:
                stop.set()
                return
            pending.extend(data)
            while b"\n" in pending:
                line, _, rest = bytes(pending).partition(b"\n")
                pending[:] = rest
                words = line.decode("utf-8", "replace").split()
                if len(words) == 2 and words[0] in ("stall", "resume"):
                    server.link.set_stalled(words[1], words[0] == "stall")
                elif words:
                    log.warning("unknown control line %r", line)
        loop.add_reader(sys.stdin.fileno(), on_stdin)
    await stop.wait()
    for listener in listeners:
        listener.close()
    # Like a controller losing power: every host sees its socket close at once.
    for connection in list(server.connections):
        connection.writer.transport.abort()
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    # A parent whose thread blocks signals (Swift's Foundation.Process does) passes the mask on;
    # without this, SIGTERM would never arrive.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    asyncio.run(main())
