import Foundation

/// A datagram socket standing in for systemd's `$NOTIFY_SOCKET`: what a child process sends
/// there (READY=1, STATUS=…, STOPPING=1) is received here, one message per datagram.
public final class NotifySocket: @unchecked Sendable {
    /// The socket's path, for the child's `NOTIFY_SOCKET`.
    public let path: String
    private let descriptor: Int32

    public init() throws {
        path = "/tmp/gattway-notify-\(getpid())-\(UUID().uuidString.prefix(8)).sock"
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket(AF_UNIX): errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else {
            close(descriptor)
            throw TestFailure("bind \(path): errno \(errno)")
        }
    }

    /// The next message, or nil when none arrives within `timeout`.
    public func receive(timeout: TimeInterval = 10) -> String? {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// The next message, or nil when none arrives within `timeout`, without blocking a thread of
    /// the cooperative pool (for async tests whose code under test runs on that pool too).
    public func next(within timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let message = receive(timeout: 0) { return message }
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(10))) != nil else { return nil }
        }
    }

    deinit {
        close(descriptor)
        unlink(path)
    }
}
