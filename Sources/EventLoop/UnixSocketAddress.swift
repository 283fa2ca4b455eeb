import Glibc

/// A Unix socket's address, the one way gattway builds it, for every socket it binds, connects or
/// sends to by path (the HCI transport, the control socket, systemd's notify socket, simulated
/// lines).
public enum UnixSocketAddress {
    /// The longest path a Unix socket address holds (`sun_path`, less its terminating NUL).
    public static let maximumPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Calls `body` with `path` as a socket address and its length. A leading `@` names an address
    /// in Linux's abstract namespace (systemd's `NOTIFY_SOCKET` may be one), whose length counts
    /// exactly its bytes. Callers check `path` against `maximumPathLength` first.
    public static func with<Result>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result
    ) rethrows -> Result {
        var bytes = Array(path.utf8)
        precondition(bytes.count <= maximumPathLength, "Unix socket path longer than \(maximumPathLength) bytes")
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length =
            abstract
            ? socklen_t(MemoryLayout.offset(of: \sockaddr_un.sun_path)! + bytes.count)
            : socklen_t(MemoryLayout<sockaddr_un>.size)
        return try withUnsafePointer(to: &address) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }
}
