import EventLoop
import Glibc

/// The Unix datagram socket through which another program sets a simulated line's levels
/// (`SignalGenerator.socket`): bound at its path while an input holds the line, watched on the
/// event loop, so an arriving level wakes gattway through a descriptor as a kernel line does.
///
/// The loop's watch holds it, and so `deliver`, until `close()`: not a weak reference, which
/// would give it a side table and take the runtime's slow path on every datagram
/// (docs/performance.md).
final class LevelSocket: @unchecked Sendable {
    let path: String
    private let descriptor: Int32
    private var watch: EventLoop.Watch?
    /// The longest datagram read whole; the rest of a longer one is cut off.
    static let datagramLimit = 256
    /// Room for one datagram, made once; used on the loop's thread only.
    private let received: UnsafeMutableRawBufferPointer
    private let deliver: @Sendable (UnsafeBufferPointer<UInt8>) -> Void

    /// Binds `path` (a stale socket file left there is replaced) and starts watching it;
    /// `deliver` gets the bytes of the datagrams read at each wake-up, in order, on the loop.
    init(path: String, deliver: @escaping @Sendable (UnsafeBufferPointer<UInt8>) -> Void) throws(GPIOError) {
        self.path = path
        self.deliver = deliver
        guard path.utf8.count <= UnixSocketAddress.maximumPathLength else {
            throw .system(
                operation: "binding the simulated line socket", target: path, errno: ENAMETOOLONG,
                message: "the path is longer than a Unix socket's \(UnixSocketAddress.maximumPathLength) bytes")
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw Self.failure("creating a socket for", path) }
        var status = stat()
        if lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK { unlink(path) }
        let bound = UnixSocketAddress.with(path) { bind(descriptor, $0, $1) }
        guard bound == 0 else {
            let error = Self.failure("binding the simulated line socket", path)
            Glibc.close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        received = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.datagramLimit, alignment: 8)
        watch = EventLoop.shared.watch(descriptor) { [self] _ in readAvailable() }
    }

    private static func failure(_ operation: String, _ path: String) -> GPIOError {
        let code = errno
        return .system(operation: operation, target: path, errno: code, message: String(cString: strerror(code)))
    }

    deinit { received.deallocate() }

    /// Reads one datagram and hands its bytes over. One per wake-up: a burst costs one system
    /// call per datagram either way (epoll is level-triggered and calls again at once while more
    /// wait), and this spares the call that would only have found the socket empty.
    private func readAvailable() {
        var count: Int
        repeat {
            count = SystemCall.recv(descriptor, received.baseAddress, Self.datagramLimit, 0)
        } while count < 0 && errno == EINTR
        guard count > 0 else { return }
        deliver(UnsafeBufferPointer(start: received.baseAddress!.assumingMemoryBound(to: UInt8.self), count: count))
    }

    /// Removes the socket's path now (the line may be requested again at once) and stops
    /// watching and closes it on the loop, where no read can be under way.
    func close() {
        unlink(path)
        EventLoop.shared.execute { [self] in
            if let watch { EventLoop.shared.unwatch(watch) }
            watch = nil
            Glibc.close(descriptor)
        }
    }
}
