import Foundation
import Glibc

/// An `HCITransport` over one open file descriptor carrying H4 framing: a stream socket, a UART,
/// or the user channel (which delivers one whole packet per read, indicator byte first).
///
/// Reads run on one thread per transport, blocked in poll(2) until the descriptor is readable or
/// reports an error, so an idle link costs nothing. Not a DispatchSource: libdispatch's epoll
/// backend hands a read source only EPOLLIN, and the kernel reports an HCI user channel whose
/// adapter was unregistered (unplugged, vhci closed) with EPOLLERR alone, which a read source
/// never sees. The descriptor is non-blocking and owned by this object until `close()`.
public final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    public let spec: HCITransportSpec
    public let incoming: AsyncThrowingStream<HCIPacket, any Error>

    // `lock` guards `isClosed`, `framer` and writes to `descriptor`.
    private let lock = NSLock()
    private let descriptor: Int32
    /// A pipe: closing the transport writes one byte to wake the reader thread, which then closes
    /// `descriptor` and the read end; the write end goes with this object.
    private let wakeup: (read: Int32, write: Int32)
    private let continuation: AsyncThrowingStream<HCIPacket, any Error>.Continuation
    private var framer = H4Framer()
    private var isClosed = false
    /// Only touched by the reader thread. Large enough for any ACL packet a user channel delivers
    /// in one read.
    private var readBuffer = [UInt8](repeating: 0, count: 65_540)

    /// Takes ownership of `descriptor`; it is closed when the transport closes or fails.
    public init(descriptor: Int32, spec: HCITransportSpec) {
        self.descriptor = descriptor
        self.spec = spec
        var ends: [Int32] = [-1, -1]
        _ = pipe(&ends)
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        wakeup = (ends[0], ends[1])
        (incoming, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self)
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        continuation.onTermination = { [weak self] _ in self?.close() }
        // The thread holds the transport weakly: dropping it closes it (deinit), which wakes the thread.
        Thread.detachNewThread { [weak self, descriptor, wakeup] in
            Self.readLoop(descriptor: descriptor, wakeup: wakeup.read) { self }
        }
    }

    deinit {
        close()
        _ = Glibc.close(wakeup.write)
    }

    /// Waits for the descriptor (or the wakeup) and reads whatever it has; returns, closing both
    /// descriptors, once the transport has been closed or has failed (the wakeup byte is written
    /// by then, so nothing writes into a pipe without a reader).
    private static func readLoop(descriptor: Int32, wakeup: Int32,
                                 transport: () -> FileDescriptorTransport?) {
        defer {
            _ = Glibc.close(descriptor)
            _ = Glibc.close(wakeup)
        }
        var entries = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeup, events: Int16(POLLIN), revents: 0)]
        while true {
            entries[0].revents = 0
            entries[1].revents = 0
            if poll(&entries, 2, -1) < 0 {
                if errno == EINTR { continue }
                transport()?.fail("waiting for \(descriptor) failed: \(String(cString: strerror(errno)))")
                return
            }
            guard entries[1].revents == 0 else { return }
            guard let transport = transport() else {
                // Being deinitialized: its `close()` is about to write the wakeup byte.
                _ = poll(&entries[1], 1, -1)
                return
            }
            guard transport.readAvailable() else { return }
            // An error or hang-up the read did not report would come back at once: end here.
            if entries[0].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                transport.fail("\(transport.spec) reports an error or hang-up (poll events 0x\(String(entries[0].revents, radix: 16)))")
                return
            }
        }
    }

    public func send(_ packet: HCIPacket) throws(HCITransportError) {
        let bytes = packet.h4Bytes
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { throw HCITransportError(.linkLost, "the link to \(spec) is closed") }
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
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
        lock.lock()
        let wasClosed = isClosed
        isClosed = true
        lock.unlock()
        guard !wasClosed else { return }
        wake()
        continuation.finish()
    }

    private func fail(_ message: String) {
        lock.lock()
        let wasClosed = isClosed
        isClosed = true
        lock.unlock()
        guard !wasClosed else { return }
        wake()
        continuation.finish(throwing: HCITransportError(.linkLost, message))
    }

    /// Called once, by whichever of `close` and `fail` closed the transport; the reader thread
    /// closes the pipe only after that.
    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeup.write, &byte, 1)
    }

    /// Reads until the descriptor has nothing more; false when the transport closed or failed.
    private func readAvailable() -> Bool {
        while true {
            guard lock.withLock({ !isClosed }) else { return false }
            let count = readBuffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                let packets: [HCIPacket]
                do {
                    lock.lock()
                    defer { lock.unlock() }
                    packets = try framer.push(readBuffer[0..<count])
                } catch {
                    fail("\(spec) sent bytes that are not HCI: \(error)")
                    return false
                }
                for packet in packets { continuation.yield(packet) }
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
