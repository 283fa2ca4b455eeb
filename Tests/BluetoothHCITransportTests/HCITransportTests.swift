import BluetoothCore
import BluetoothHCI
import Foundation
import Glibc
import Synchronization
import TestHarness
import Testing

@testable import BluetoothHCITransport

/// Transports over real descriptors: a Unix socket, TCP, a pseudo-terminal standing in for a
/// UART. The bytes are H4, split however the test chooses.
@Suite(.timeLimit(.minutes(1)))
struct HCITransportTests {
    static let events: [HCIPacket] = [
        .event(.commandComplete(numCommandPackets: 1, opcode: .reset, returnParameters: [0])),
        .acl(HCIACLPacket(handle: 0x40, boundary: .firstFlushable, data: Array(0..<100)))
    ]

    /// Writes all of `bytes` to a blocking descriptor in `chunk`-byte writes.
    static func write(_ bytes: [UInt8], to descriptor: Int32, chunk: Int) {
        var start = 0
        while start < bytes.count {
            let end = min(start + chunk, bytes.count)
            let written = bytes[start..<end].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            precondition(written > 0)
            start += written
        }
    }

    static func read(_ count: Int, from descriptor: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        while out.count < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            guard got > 0 else { break }
            out += buffer[0..<got]
        }
        return out
    }

    /// What the transport hands its receiver, as a stream the test can wait on: each packet, then
    /// the end (with the failure, if the link broke).
    static func received(from transport: any HCITransport) -> AsyncThrowingStream<HCIPacket, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self)
        transport.start(
            receive: { continuation.yield($0) },
            ended: { failure in
                if let failure { continuation.finish(throwing: failure) } else { continuation.finish() }
            })
        return stream
    }

    static func collect(_ packets: AsyncThrowingStream<HCIPacket, any Error>, count: Int) async throws -> [HCIPacket] {
        var collected: [HCIPacket] = []
        for try await packet in packets {
            collected.append(packet)
            if collected.count == count { break }
        }
        return collected
    }

    @Test func unixSocketCarriesH4BothWaysAndReportsTheClose() async throws {
        let path = NSTemporaryDirectory() + "gattway-h4-\(UUID().uuidString.prefix(8)).sock"
        defer { unlink(path) }
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)
        #expect(listen(listener, 1) == 0)

        let transport = try HCITransportSpec.unix(path: path).open()
        let packets = Self.received(from: transport)
        let peer = accept(listener, nil, nil)
        #expect(peer >= 0)
        Self.write(Self.events.flatMap(\.h4Bytes), to: peer, chunk: 3)
        #expect(try await Self.collect(packets, count: 2) == Self.events)

        try transport.send(.command(.reset))
        #expect(Self.read(4, from: peer) == [0x01, 0x03, 0x0C, 0x00])

        close(peer)
        await #expect(throws: HCITransportError(.linkLost, "unix:\(path) closed the connection")) {
            for try await _ in packets {}
        }
        #expect(throws: HCITransportError.self) { try transport.send(.command(.reset)) }
    }

    @Test func tcpCarriesH4() async throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        #expect(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let transport = try HCITransportSpec.tcp(host: "127.0.0.1", port: port).open()
        defer { transport.close() }
        let peer = accept(listener, nil, nil)
        defer { close(peer) }
        Self.write(Self.events.flatMap(\.h4Bytes), to: peer, chunk: 1)
        #expect(try await Self.collect(Self.received(from: transport), count: 2) == Self.events)
    }

    @Test func serialPortOverAPseudoTerminal() async throws {
        // posix_openpt and friends are not visible through Glibc: do what they do, by ioctl.
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        #expect(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        #expect(ioctl(master, UInt(0x4004_5431), &unlock) == 0)  // TIOCSPTLCK
        #expect(ioctl(master, UInt(0x8004_5430), &number) == 0)  // TIOCGPTN
        let device = "/dev/pts/\(number)"
        let transport = try HCITransportSpec.serial(device: device, baudRate: 1_000_000).open()
        defer { transport.close() }
        Self.write(Self.events.flatMap(\.h4Bytes), to: master, chunk: 7)
        #expect(try await Self.collect(Self.received(from: transport), count: 2) == Self.events)
        try transport.send(.command(.leSetAdvertisingEnable(true)))
        #expect(Self.read(5, from: master) == [0x01, 0x0A, 0x20, 0x01, 0x01])
    }

    /// A started transport lives while the loop watches it; once closed it lets go of its
    /// watch and its receiver, so it and the receiver's captures (the host) are freed.
    /// An ACL packet is written from its parts (header, prefix, body) in one `writev`; one the
    /// socket takes only in part (its buffer full) is finished from where it stopped, so the peer
    /// reads every packet whole, once, in order.
    @Test func aclPacketsTheSocketTakesInPartArriveWholeAndInOrder() throws {
        var descriptors: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        defer { close(descriptors[1]) }
        // A Unix socket sends at most half its buffer at a time: a packet larger than that, on a
        // buffer that fills, is taken in part.
        var small: Int32 = 4096
        setsockopt(descriptors[0], SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let transport = FileDescriptorTransport(descriptor: descriptors[0], spec: .unix(path: "pair"))
        // Every other packet with a prefix of its number's length (1 to 8 bytes) before its body.
        let prefix: UInt64 = 0x8877_6655_4433_2211
        struct Part {
            let handle: UInt16
            let boundary: HCIACLPacket.Boundary
            let prefixLength: Int
            let body: [UInt8]
        }
        let parts = (0..<64).map { (number: Int) -> Part in
            let body = (0..<10_000).map { (byte: Int) in UInt8(truncatingIfNeeded: byte + number) }
            return number % 2 == 0
                ? Part(handle: 0x40, boundary: .firstNonFlushable, prefixLength: 0, body: body)
                : Part(handle: 0x41, boundary: .continuing, prefixLength: 1 + (number / 2) % 8, body: body)
        }
        let sender = Thread {
            for part in parts {
                try? transport.sendACL(
                    handle: part.handle, boundary: part.boundary, prefix: prefix, prefixLength: part.prefixLength,
                    body: part.body[...])
            }
            transport.close()
        }
        let prefixBytes: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        let expected = parts.flatMap { part in
            HCIPacket.acl(
                HCIACLPacket(
                    handle: part.handle, boundary: part.boundary,
                    data: Array(prefixBytes[0..<part.prefixLength]) + part.body)
            ).h4Bytes
        }
        sender.start()
        // Slower than the sender, so its writes find the socket's buffer full; until the close,
        // or until more came than was sent.
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 3000)
        while true {
            let got = buffer.withUnsafeMutableBytes { Glibc.read(descriptors[1], $0.baseAddress, $0.count) }
            guard got > 0 else { break }
            received += buffer[0..<got]
            if received.count > expected.count { break }
            usleep(200)
        }
        #expect(received == expected)
    }

    @Test func aClosedTransportIsFreedWithItsReceiver() async throws {
        final class Receiver: Sendable {}
        var descriptors: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        defer { close(descriptors[1]) }
        weak var weakTransport: FileDescriptorTransport?
        weak var weakReceiver: Receiver?
        let (ended, endedSink) = AsyncStream.makeStream(of: Void.self)
        do {
            let receiver = Receiver()
            weakReceiver = receiver
            let transport = FileDescriptorTransport(descriptor: descriptors[0], spec: .unix(path: "pair"))
            weakTransport = transport
            transport.start(receive: { _ in _ = receiver }, ended: { _ in endedSink.yield() })
        }
        // Watched: the loop keeps it although nothing here does.
        try await Task.sleep(for: .milliseconds(50))
        do {
            let owner = try #require(weakTransport)
            owner.close()
            var iterator = ended.makeAsyncIterator()
            await iterator.next()
            // Let go of although its owner (the host, which the receiver reaches) still has it.
            #expect(await eventually { weakReceiver == nil })
        }
        #expect(await eventually { weakTransport == nil })
    }

    /// Packets that arrive in one read are handed on one by one; once the receiver closes the
    /// link over one of them, the rest are not handed on.
    @Test func aReceiverThatClosesTheLinkIsHandedNoMorePackets() async throws {
        var descriptors: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        defer { close(descriptors[1]) }
        let transport = FileDescriptorTransport(descriptor: descriptors[0], spec: .unix(path: "pair"))
        let packets: [HCIPacket] = (1...3).map { .event(.hardwareError(code: $0)) }
        // Written before the transport starts, so its first read takes all three.
        Self.write(packets.flatMap(\.h4Bytes), to: descriptors[1], chunk: 64)
        let received = Mutex<[HCIPacket]>([])
        let (ended, endedSink) = AsyncStream.makeStream(of: Void.self)
        transport.start(
            receive: { packet in
                received.withLock { $0.append(packet) }
                transport.close()
            },
            ended: { _ in endedSink.yield() })
        var iterator = ended.makeAsyncIterator()
        await iterator.next()
        // Time for a packet handed on after the close to arrive, were one handed on.
        try await Task.sleep(for: .milliseconds(100))
        #expect(received.withLock { $0 } == [packets[0]])
    }

    @Test func junkOnTheStreamEndsTheLinkWithTheReason() async throws {
        var descriptors: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &descriptors) == 0)
        defer { close(descriptors[1]) }
        let transport = FileDescriptorTransport(descriptor: descriptors[0], spec: .unix(path: "pair"))
        Self.write([0x42, 0x00], to: descriptors[1], chunk: 2)
        await #expect(
            throws: HCITransportError(
                .linkLost, "unix:pair sent bytes that are not HCI: unknown HCI packet type 0x42 (expected 0x01-0x05)")
        ) {
            for try await _ in Self.received(from: transport) {}
        }
    }

    /// An error the kernel reports with POLLERR alone (no POLLIN), as it reports a user channel
    /// whose adapter was unregistered: here a connected UDP socket whose datagram met a closed
    /// port (ICMP port unreachable). The link must end with the error, not wait forever.
    @Test(.timeLimit(.minutes(1))) func anErrorWithoutDataEndsTheLink() async throws {
        func udpSocket(port: UInt16, connect shouldConnect: Bool) -> (Int32, UInt16) {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    _ = shouldConnect ? connect(fd, $0, length) : bind(fd, $0, length)
                    _ = getsockname(fd, $0, &length)
                }
            }
            return (fd, UInt16(bigEndian: address.sin_port))
        }
        let (closed, port) = udpSocket(port: 0, connect: false)
        close(closed)  // nothing listens on `port` any more
        let (descriptor, _) = udpSocket(port: port, connect: true)
        let transport = FileDescriptorTransport(descriptor: descriptor, spec: .unix(path: "udp"))
        defer { transport.close() }
        try transport.send(.command(.leSetAdvertisingEnable(true)))
        await #expect(throws: HCITransportError(.linkLost, "reading from unix:udp failed: Connection refused")) {
            for try await _ in Self.received(from: transport) {}
        }
    }

    @Test func openFailuresSayWhatHappened() {
        #expect {
            try HCITransportSpec.unix(path: "/nonexistent/gattway.sock").open()
        } throws: { error in
            let failure = error as? HCITransportError
            return failure?.kind == .notFound && failure?.message.contains("/nonexistent/gattway.sock") == true
        }
        #expect {
            try HCITransportSpec.serial(device: "/dev/nonexistent-uart", baudRate: 115_200).open()
        } throws: { error in
            (error as? HCITransportError)?.kind == .notFound
        }
        #expect {
            try HCITransportSpec.tcp(host: "127.0.0.1", port: 1).open()
        } throws: { error in
            (error as? HCITransportError)?.kind == .unavailable
        }
    }

    /// The kernel's real answer for an adapter that does not exist, whichever this host gives:
    /// no Bluetooth in the kernel at all, no such adapter (as root), or no CAP_NET_ADMIN (as
    /// another user, refused before the adapter is looked up). Each has its own explanation.
    @Test func userChannelOnAMissingAdapterFailsWithAReason() {
        let probe = socket(AF_BLUETOOTH, Int32(SOCK_RAW.rawValue), 1)  // BTPROTO_HCI
        let kernelHasBluetooth = probe >= 0 || errno != EAFNOSUPPORT
        if probe >= 0 { close(probe) }
        let expected: (kind: HCITransportError.Kind, text: String) =
            !kernelHasBluetooth
            ? (.notFound, "this kernel has no Bluetooth support")
            : geteuid() == 0
                ? (.notFound, "no such adapter hci250")
                : (.permissionDenied, "CAP_NET_ADMIN")
        #expect {
            try HCITransportSpec.userChannel(adapter: 250).open()
        } throws: { error in
            guard let failure = error as? HCITransportError else { return false }
            return failure.kind == expected.kind && failure.message.contains(expected.text)
        }
    }

    /// The errno values as the kernel returns them (include/uapi/asm-generic/errno-base.h and
    /// errno.h, the same on x86_64 and arm64), not the C library's names for them: a mistaken
    /// constant on either side would fail here. EBUSY means two things: on HCIDEVDOWN, another
    /// socket holds the user channel (the VM stage produces it for real); on bind, the adapter is
    /// up (bluetoothd).
    static let explanations: [(Int32, UserChannel.Step, HCITransportError.Kind, String)] = [
        // EPERM
        (1, .binding, .permissionDenied, "opening the user channel on hci3 failed: permission denied (EPERM); gattway needs CAP_NET_ADMIN"),
        // EBUSY on bind, then on HCIDEVDOWN
        (16, .binding, .busy, "opening the user channel on hci3 failed: hci3 is in use (EBUSY); bluetoothd or another program holds it"),
        (
            16, .bringingDown, .busy,
            "bringing hci3 down failed: another program holds hci3 through the HCI user channel (EBUSY), and only one can. Stop it"
        ),
        // EUSERS
        (
            87, .binding, .busy,
            "opening the user channel on hci3 failed: another program holds hci3 through the HCI user channel (EUSERS), and only one can"
        ),
        // ERFKILL
        (132, .binding, .rfkillBlocked, "hci3 is blocked by rfkill (ERFKILL); unblock it with `rfkill unblock bluetooth`"),
        // ENODEV
        (19, .bringingDown, .notFound, "bringing hci3 down failed: no such adapter hci3 (ENODEV)")
    ]

    @Test(arguments: explanations)
    func userChannelErrnosAreExplained(code: Int32, step: UserChannel.Step, kind: HCITransportError.Kind, message: String) {
        let error = UserChannel.explain(code, adapter: 3, step: step)
        #expect(error.kind == kind)
        #expect(error.message.contains(message), "\(error.message)")
    }
}
