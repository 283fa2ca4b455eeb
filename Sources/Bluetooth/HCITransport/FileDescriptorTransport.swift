import BluetoothHCI
import EventLoop
import FoundationEssentials
import Glibc
import Synchronization

/// An `HCITransport` over one open file descriptor carrying H4 framing: a stream socket, a UART,
/// or the user channel (which delivers one whole packet per read, indicator byte first).
///
/// The descriptor is watched by the `EventLoop` from `start` on: when it is readable the loop's
/// thread reads what it has, frames it and hands each packet to the receiver right there (the host,
/// an actor on the same loop, handles it in that call). An idle link costs nothing. epoll reports errors and hang-ups unasked, which matters: the kernel reports an HCI
/// user channel whose adapter was unregistered (unplugged, vhci closed) with EPOLLERR alone. The
/// descriptor is non-blocking and owned by this object until `close()`.
///
/// A started transport lives until it closes or fails: the loop's watch holds it, and `end`
/// lets go of the watch and the receiver. Not a weak reference from the watch: that would give
/// the transport a side table, and every retain and release of it, on every packet, would take
/// the runtime's slow path (docs/performance.md). One never started closes when it is dropped.
public final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    public let spec: HCITransportSpec

    // `lock` guards `ended`, `writeBuffer`, writes to `descriptor` and changes to `closed`.
    private let lock = Mutex(())
    private let descriptor: Int32
    private let loop = EventLoop.shared
    /// Set once, under `lock`, when the transport closes or fails. Read without the lock by the
    /// loop's thread before each read and each packet it hands on: taking the lock there cost
    /// two lock-and-unlock pairs per packet received (docs/performance.md).
    private let closed = Atomic<Bool>(false)
    private var isClosed: Bool { closed.load(ordering: .acquiring) }
    /// Told once when the link ends; set by `start`.
    private var ended: (@Sendable (HCITransportError?) -> Void)?
    /// Every packet is written from here: one buffer, not an allocation per packet.
    private var writeBuffer: [UInt8] = []
    private let watched = Watched()
    // Only touched on the loop's thread.
    private var framer = H4Framer()
    /// Large enough for any ACL packet a user channel delivers in one read.
    private var readBuffer = [UInt8](repeating: 0, count: 65_540)

    /// Takes ownership of `descriptor`; it is closed when the transport closes or fails.
    public init(descriptor: Int32, spec: HCITransportSpec) {
        self.descriptor = descriptor
        self.spec = spec
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    }

    public func start(
        receive: @escaping @Sendable (HCIPacket) -> Void, ended: @escaping @Sendable (HCITransportError?) -> Void
    ) {
        let open = lock.withLock { _ in
            if !isClosed { self.ended = ended }
            return !isClosed
        }
        guard open else { return ended(HCITransportError(.linkLost, "the link to \(spec) is closed")) }
        loop.execute { [self, loop, watched, descriptor] in
            guard !isClosed else { return }
            watched.receive = receive
            watched.watch = loop.watch(descriptor) { readiness in self.ready(readiness) }
        }
    }

    deinit { close() }

    /// On the loop's thread: reads what the descriptor has; ends the transport on an error.
    private func ready(_ readiness: EventLoop.Readiness) {
        guard readAvailable(untilEmpty: readiness.isFailure) else { return }
        // An error or hang-up the read did not report would come back at once: end here.
        if readiness.isFailure {
            fail("\(spec) reports an error or hang-up (epoll events 0x\(String(readiness.rawValue, radix: 16)))")
        }
    }

    public func send(_ packet: HCIPacket) throws(HCITransportError) {
        if case .acl(let acl) = packet {
            try sendACL(handle: acl.handle, boundary: acl.boundary, prefix: 0, prefixLength: 0, body: acl.data[...])
            return
        }
        try lock.withLock { _ throws(HCITransportError) in
            writeBuffer.removeAll(keepingCapacity: true)
            packet.appendH4(to: &writeBuffer)
            try writeLocked(writeBuffer, from: 0)
        }
    }

    /// The header, the prefix and the body go out from where they lie, in one `writev`: copying
    /// them into `writeBuffer` first cost about 300 instructions per notification, assembling
    /// the packet's data about 400 more (docs/performance.md). What the descriptor does not take
    /// at once (its buffer full, a signal) is finished through `writeBuffer`.
    public func sendACL(
        handle: UInt16, boundary: HCIACLPacket.Boundary, prefix: UInt64, prefixLength: Int, body: ArraySlice<UInt8>
    ) throws(HCITransportError) {
        precondition(prefixLength >= 0 && prefixLength <= 8, "an ACL packet's prefix is at most eight bytes")
        let header = HCIACLPacket.header(handle: handle, boundary: boundary, dataLength: prefixLength + body.count)
        let length = HCIACLPacket.h4HeaderLength + prefixLength + body.count
        try lock.withLock { _ throws(HCITransportError) in
            guard !isClosed else { throw HCITransportError(.linkLost, "the link to \(spec) is closed") }
            let sent = withUnsafeBytes(of: header.littleEndian) { header in
                withUnsafeBytes(of: prefix.littleEndian) { prefix in
                    body.withUnsafeBytes { body in
                        var parts = (
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: header.baseAddress), iov_len: HCIACLPacket.h4HeaderLength),
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: prefix.baseAddress), iov_len: prefixLength),
                            iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: body.count)
                        )
                        return withUnsafePointer(to: &parts) {
                            $0.withMemoryRebound(to: iovec.self, capacity: 3) { SystemCall.writev(descriptor, $0, 3) }
                        }
                    }
                }
            }
            guard sent != length else { return }
            let packet = HCIACLPacket(handle: handle, boundary: boundary, prefix: prefix, prefixLength: prefixLength, body: body)
            writeBuffer.removeAll(keepingCapacity: true)
            HCIPacket.acl(packet).appendH4(to: &writeBuffer)
            try writeLocked(writeBuffer, from: max(sent, 0))
        }
    }

    /// Under `lock`, so packets from different callers are never interleaved on the descriptor;
    /// `bytes` from `start` on (the bytes before went out already).
    private func writeLocked(_ bytes: [UInt8], from start: Int) throws(HCITransportError) {
        guard !isClosed else { throw HCITransportError(.linkLost, "the link to \(spec) is closed") }
        var sent = start
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { SystemCall.write(descriptor, $0.baseAddress, $0.count) }
            if result >= 0 {
                sent += result
                continue
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK {
                // The kernel buffer is full: wait for room rather than spin.
                var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                if poll(&entry, 1, 5_000) > 0 { continue }
                throw HCITransportError(.linkLost, "writing to \(spec) stalled for 5 s")
            }
            throw HCITransportError(.linkLost, "writing to \(spec) failed: \(String(cString: strerror(code)))")
        }
    }

    public func close() {
        end(nil)
    }

    private func fail(_ message: String) {
        end(HCITransportError(.linkLost, message))
    }

    /// Closes once: the receiver is told how the link ended; the descriptor is unwatched and
    /// closed on the loop's thread, after any handler already running for it.
    private func end(_ failure: HCITransportError?) {
        let (wasClosed, ended) = lock.withLock { _ in
            defer {
                closed.store(true, ordering: .releasing)
                self.ended = nil
            }
            return (isClosed, self.ended)
        }
        guard !wasClosed else { return }
        ended?(failure)
        // Captures no `self`: this may run from deinit.
        loop.execute { [loop, watched, descriptor] in
            if let watch = watched.watch { loop.unwatch(watch) }
            watched.watch = nil
            watched.receive = nil
            _ = Glibc.close(descriptor)
        }
    }

    /// The descriptor's watch and the receiver it hands packets to, set by `start`, let go of by
    /// `end`; touched only on the loop's thread.
    private final class Watched: @unchecked Sendable {
        var watch: EventLoop.Watch?
        var receive: (@Sendable (HCIPacket) -> Void)?
    }

    /// Reads what the descriptor has; false when the transport closed or failed. A read that
    /// filled less than the buffer took everything there was, so it stops there, sparing the read
    /// that would only find the descriptor empty (epoll calls again for what arrives later);
    /// `untilEmpty` reads on until the descriptor says so, for the end of a failing link.
    private func readAvailable(untilEmpty: Bool) -> Bool {
        while true {
            guard !isClosed else { return false }
            let count = readBuffer.withUnsafeMutableBytes { SystemCall.read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                // Each packet goes to the receiver as it is framed, not into a list first: a list
                // appended to, then emptied, cost about 100 instructions per packet. The receiver
                // may close the link over a packet: the rest of the read is not handed on.
                do throws(HCIDecodingError) {
                    try framer.push(readBuffer[0..<count]) { packet in
                        guard !isClosed else { return false }
                        watched.receive?(packet)
                        return true
                    }
                } catch {
                    fail("\(spec) sent bytes that are not HCI: \(error)")
                    return false
                }
                if count < readBuffer.count, !untilEmpty { return true }
                continue
            }
            if count == 0 {
                fail("\(spec) closed the connection")
                return false
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return true }
            fail("reading from \(spec) failed: \(String(cString: strerror(code)))")
            return false
        }
    }
}
