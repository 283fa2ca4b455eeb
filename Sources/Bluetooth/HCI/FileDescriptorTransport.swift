import Dispatch
import Foundation
import Glibc

/// An `HCITransport` over one open file descriptor carrying H4 framing: a stream socket, a UART,
/// or the user channel (which delivers one whole packet per read, indicator byte first).
///
/// Reads are driven by a DispatchSource on the descriptor, so an idle link costs nothing; the
/// descriptor is non-blocking and owned by this object until `close()`.
public final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    public let spec: HCITransportSpec
    public let incoming: AsyncThrowingStream<HCIPacket, any Error>

    // `lock` guards `isClosed`, `framer` and writes to `descriptor`.
    private let lock = NSLock()
    private let descriptor: Int32
    private let continuation: AsyncThrowingStream<HCIPacket, any Error>.Continuation
    private let source: any DispatchSourceRead
    private var framer = H4Framer()
    private var isClosed = false
    /// Only touched by the read source's serial queue. Large enough for any ACL packet a user
    /// channel delivers in one read.
    private var readBuffer = [UInt8](repeating: 0, count: 65_540)

    /// Takes ownership of `descriptor`; it is closed when the transport closes or fails.
    public init(descriptor: Int32, spec: HCITransportSpec) {
        self.descriptor = descriptor
        self.spec = spec
        (incoming, continuation) = AsyncThrowingStream.makeStream(of: HCIPacket.self)
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        source = DispatchSource.makeReadSource(
            fileDescriptor: descriptor, queue: DispatchQueue(label: "gattway.hci.\(spec)"))
        source.setEventHandler { [weak self] in self?.readAvailable() }
        source.setCancelHandler { _ = Glibc.close(descriptor) }
        continuation.onTermination = { [weak self] _ in self?.close() }
        source.resume()
    }

    deinit { close() }

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
        source.cancel()
        continuation.finish()
    }

    private func fail(_ message: String) {
        lock.lock()
        let wasClosed = isClosed
        isClosed = true
        lock.unlock()
        guard !wasClosed else { return }
        source.cancel()
        continuation.finish(throwing: HCITransportError(.linkLost, message))
    }

    private func readAvailable() {
        while true {
            let count = readBuffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count > 0 {
                let packets: [HCIPacket]
                do {
                    lock.lock()
                    defer { lock.unlock() }
                    packets = try framer.push(readBuffer[0..<count])
                } catch {
                    fail("\(spec) sent bytes that are not HCI: \(error)")
                    return
                }
                for packet in packets { continuation.yield(packet) }
                continue
            }
            if count == 0 {
                fail("\(spec) closed the connection")
                return
            }
            let code = errno
            if code == EINTR { continue }
            if code == EAGAIN || code == EWOULDBLOCK { return }
            fail("reading from \(spec) failed: \(String(cString: strerror(code)))")
            return
        }
    }
}
