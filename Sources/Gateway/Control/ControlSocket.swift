import EventLoop
import FoundationEssentials
import Glibc

/// The running service's control socket: a Unix stream socket (`<runtime_dir>/control.sock`,
/// mode 0600, in a directory only the service's user may write) where `gattway status`, `gattway bonds` and
/// `gattway reload` reach the service. Requests and answers are JSON objects, one per line
/// (`ControlLine`); a connection may send any number of requests and gets the answers in order.
///
/// It lives on the event loop (the listening socket and every connection are watched
/// descriptors, all non-blocking), so it adds no thread; requests are answered by `handler`,
/// which may await the gateway's actors.
///
/// File modes are not the only guard: each connection's peer (`SO_PEERCRED`) must be root or
/// the service's own user, else it gets one refusal and is closed, so a socket file or directory
/// whose mode was loosened by hand still lets no one else in.
public final class ControlSocket: @unchecked Sendable {
    public enum Error: Swift.Error, CustomStringConvertible {
        case failed(String, path: String, errno: Int32)
        case taken(path: String)
        /// The runtime directory is not the service's own: another user could replace the socket.
        case unsafeDirectory(path: String, reason: String)

        public var description: String {
            switch self {
            case .unsafeDirectory(let path, let reason):
                "runtime_dir \(path) \(reason); refusing to put the control socket there (chown it to the "
                    + "service's user and chmod 0700, or remove it so gattway makes it)"
            case .failed(let step, let path, let code): "control socket \(path): \(step) failed: \(String(cString: strerror(code)))"
            case .taken(let path): "control socket \(path): another gattway answers there"
            }
        }
    }

    public static func path(runtimeDirectory: String) -> String { runtimeDirectory + "/control.sock" }

    /// The longest request line taken; a longer one ends its connection.
    static let maximumLineLength = 64 * 1024

    public let path: String
    private let loop: EventLoop
    private let handler: @Sendable (ControlRequest) async -> ControlResponse
    // Confined to the loop's thread.
    private let descriptor: Int32
    private var watch: EventLoop.Watch?
    private var connections: [Int32: Connection] = [:]

    /// Creates the runtime directory (0700) when missing and listens on its `control.sock`. A
    /// stale socket (a process that died without removing it) is replaced; one where another
    /// gattway answers is not (`Error.taken`).
    public init(
        runtimeDirectory: String, loop: EventLoop = .shared,
        handler: @escaping @Sendable (ControlRequest) async -> ControlResponse
    ) throws(Error) {
        path = Self.path(runtimeDirectory: runtimeDirectory)
        self.loop = loop
        self.handler = handler
        guard path.utf8.count <= UnixSocketAddress.maximumPathLength else {
            throw .failed("bind", path: path, errno: ENAMETOOLONG)
        }
        if mkdir(runtimeDirectory, 0o700) != 0, errno != EEXIST {
            throw .failed("mkdir", path: runtimeDirectory, errno: errno)
        }
        try Self.checkOwnDirectory(runtimeDirectory)
        if Self.answers(path) { throw .taken(path: path) }
        unlink(path)
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .failed("socket", path: path, errno: errno) }
        // bind creates the file with the umask's mode; connecting needs write permission on it,
        // and listen comes only after chmod, so nobody else connects in between.
        let failure: (String, Int32)? =
            if UnixSocketAddress.with(path, { bind(descriptor, $0, $1) }) != 0 {
                ("bind", errno)
            } else if chmod(path, 0o600) != 0 {
                ("chmod", errno)
            } else if listen(descriptor, 16) != 0 {
                ("listen", errno)
            } else {
                nil
            }
        if let (step, code) = failure {
            close(descriptor)
            throw .failed(step, path: path, errno: code)
        }
    }

    /// Starts taking connections on the loop.
    public func start() {
        loop.execute { [self] in
            watch = loop.watch(descriptor) { [self] _ in acceptAll() }
        }
    }

    /// Closes every connection and the socket, and removes its file.
    public func stop() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                for connection in connections.values { end(connection) }
                if let watch { loop.unwatch(watch) }
                watch = nil
                close(descriptor)
                unlink(path)
                done.resume()
            }
        }
    }

    // MARK: On the loop

    /// Confined to the loop's thread (handlers and `loop.execute` bodies).
    private final class Connection: @unchecked Sendable {
        let descriptor: Int32
        var watch: EventLoop.Watch?
        var received: [UInt8] = []
        /// Requests waiting while an earlier one of this connection is answered.
        var queued: [[UInt8]] = []
        var answering = false
        var ended = false
        /// Why this peer may not ask (`SO_PEERCRED`): its first request gets this answer, and the
        /// connection ends. Answering the request rather than closing at once lets the client
        /// read why instead of failing to send.
        var refusal: String?

        init(descriptor: Int32) { self.descriptor = descriptor }
    }

    private func acceptAll() {
        while true {
            let client = accept(descriptor, nil, nil)
            guard client >= 0 else { return }
            // accept4's flags are not visible to Swift: set both on the new descriptor.
            _ = fcntl(client, F_SETFL, O_NONBLOCK)
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            let connection = Connection(descriptor: client)
            connections[client] = connection
            connection.refusal = Self.peerRefusal(client)
            connection.watch = loop.watch(client) { [self] readiness in receive(on: connection, readiness) }
        }
    }

    private func receive(on connection: Connection, _ readiness: EventLoop.Readiness) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(connection.descriptor, &buffer, buffer.count)
        if count < 0, errno == EAGAIN || errno == EINTR { return }
        guard count > 0 else { return end(connection) }
        connection.received += buffer[..<count]
        while let newline = connection.received.firstIndex(of: UInt8(ascii: "\n")) {
            connection.queued.append(Array(connection.received[..<newline]))
            connection.received.removeSubrange(...newline)
        }
        guard connection.received.count <= Self.maximumLineLength else { return end(connection) }
        answerNext(on: connection)
    }

    /// Answers the oldest queued request, then the next, one at a time so answers keep order.
    private func answerNext(on connection: Connection) {
        guard !connection.answering, !connection.ended, !connection.queued.isEmpty else { return }
        if let refusal = connection.refusal {
            connection.queued = []
            send(.failure(refusal), on: connection)
            return end(connection)
        }
        let line = connection.queued.removeFirst()
        connection.answering = true
        let request: ControlRequest
        do {
            request = try ControlLine.decode(ControlRequest.self, from: line)
        } catch {
            return send(.failure("not a request: \(Self.describe(error))"), on: connection)
        }
        Task(executorPreference: loop) { [self, handler] in
            let response = await handler(request)
            loop.execute { [self] in send(response, on: connection) }
        }
    }

    /// Writes the whole answer at once; a client that does not read its answers (the socket's
    /// buffer full) is disconnected rather than waited for on the loop.
    private func send(_ response: ControlResponse, on connection: Connection) {
        connection.answering = false
        guard !connection.ended else { return }
        let bytes = ControlLine.encode(response)
        let written = bytes.withUnsafeBytes { Glibc.send(connection.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard written == bytes.count else { return end(connection) }
        answerNext(on: connection)
    }

    private func end(_ connection: Connection) {
        guard !connection.ended else { return }
        connection.ended = true
        if let watch = connection.watch { loop.unwatch(watch) }
        close(connection.descriptor)
        connections[connection.descriptor] = nil
    }

    // MARK: Helpers

    /// Why the runtime directory may not hold the socket: not a directory, owned by another user
    /// than the service's, or writable by group or others; nil when it is the service's own.
    static func checkOwnDirectory(_ path: String) throws(Error) {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw .failed("stat", path: path, errno: errno) }
        if info.st_mode & S_IFMT != S_IFDIR {
            throw .unsafeDirectory(path: path, reason: "is not a directory")
        }
        if info.st_uid != geteuid() {
            throw .unsafeDirectory(path: path, reason: "is owned by uid \(info.st_uid), not the service's uid \(geteuid())")
        }
        if info.st_mode & 0o022 != 0 {
            let mode = String(info.st_mode & 0o777, radix: 8)
            throw .unsafeDirectory(path: path, reason: "is writable by group or others (mode 0\(mode))")
        }
    }

    /// Whether a peer with `uid` may use the socket: root, or the service's own user.
    public static func permits(peerUID uid: uid_t, serviceUID: uid_t) -> Bool { uid == 0 || uid == serviceUID }

    /// The answer refusing the peer on `descriptor` (`SO_PEERCRED`), or nil when it may ask.
    private static func peerRefusal(_ descriptor: Int32) -> String? {
        // struct ucred (pid, uid, gid: three 32-bit fields) is hidden behind _GNU_SOURCE in the
        // Glibc module, so its words are read as such.
        var credentials = [UInt32](repeating: 0, count: 3)
        var length = socklen_t(MemoryLayout<UInt32>.size * credentials.count)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            return "refused: cannot tell who is asking (SO_PEERCRED: \(String(cString: strerror(errno))))"
        }
        let uid = uid_t(credentials[1])
        guard permits(peerUID: uid, serviceUID: geteuid()) else {
            return "refused: uid \(uid) is neither root nor gattway's user (uid \(geteuid()))"
        }
        return nil
    }

    /// Whether a process accepts connections on `path` now.
    static func answers(_ path: String) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { close(probe) }
        return UnixSocketAddress.with(path) { connect(probe, $0, $1) } == 0
    }

    private static func describe(_ error: any Swift.Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty:
            "unknown \(context.codingPath.map(\.stringValue).joined(separator: ".")) (commands: "
                + ControlRequest.Command.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case DecodingError.dataCorrupted: "not JSON"
        case DecodingError.keyNotFound(let key, _): "\"\(key.stringValue)\" is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        default: "\(error)"
        }
    }
}
