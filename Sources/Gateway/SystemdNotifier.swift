import EventLoop
import Glibc

/// Tells systemd about readiness and status (`sd_notify(3)`'s protocol: one datagram of
/// newline-separated `KEY=value` assignments to the socket named by `$NOTIFY_SOCKET`).
///
/// Written here rather than linked from libsystemd so the service has no extra runtime
/// dependency; without `$NOTIFY_SOCKET` (not started by systemd) every call does nothing.
public struct SystemdNotifier: Sendable {
    /// The socket path; a leading "@" names a socket in the abstract namespace.
    public let socketPath: String?

    public init(environment: [String: String]) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    public init(socketPath: String?) {
        self.socketPath = socketPath
    }

    /// "STOPPING=1" when shutdown begins.
    public func stopping() { send("STOPPING=1") }

    /// Sends one datagram; returns whether systemd's socket took it. Failures are not errors for
    /// the service: readiness is a courtesy to the supervisor. Never blocks (a full socket drops
    /// the message): the watchdog sends from the event loop.
    @discardableResult
    public func send(_ message: String) -> Bool {
        guard let socketPath, socketPath.utf8.count <= UnixSocketAddress.maximumPathLength else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }

        let bytes = Array(message.utf8)
        let sent = UnixSocketAddress.with(socketPath) { address, length in
            sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT), address, length)
        }
        return sent == bytes.count
    }
}
