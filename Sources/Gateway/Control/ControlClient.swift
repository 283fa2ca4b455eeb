import Config
import EventLoop
import Glibc
import StateFile

/// The command line's side of the running service's control socket (`ControlSocket`): one
/// request, one answer.
public enum ControlClient {
    public enum Outcome: Sendable {
        case answered(ControlResponse)
        /// Nothing listens on the socket (no file, or a stale one) and no gattway holds the
        /// configuration's state directory: the service is not running.
        case notRunning(path: String)
        /// The service may run but could not be asked (permission, a broken answer).
        case failed(String)
    }

    /// A gattway (`pid`) holds the configuration's `state_dir` but does not answer on its
    /// control socket: its `runtime_dir` is another, or it could not make the socket.
    public static func unanswered(_ config: GatewayConfig, pid: pid_t?) -> String {
        "a gattway\(pid.map { " (pid \($0))" } ?? "") runs on state_dir \(config.stateDirectory) but nothing "
            + "answers on \(ControlSocket.path(runtimeDirectory: config.runtimeDirectory)): its runtime_dir is another "
            + "than this configuration's, or its log says why it has no control socket"
    }

    /// How long an answer may take; the service answers from its event loop at once.
    static let timeoutSeconds = 10

    /// Sends `request` for the service of `config` (its `state_dir` goes with it, see
    /// `ControlRequest.stateDirectory`).
    public static func ask(_ request: ControlRequest, config: GatewayConfig) -> Outcome {
        let path = ControlSocket.path(runtimeDirectory: config.runtimeDirectory)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return .failed("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard UnixSocketAddress.with(path, { connect(descriptor, $0, $1) }) == 0 else {
            let code = errno
            if code == ENOENT || code == ECONNREFUSED {
                guard let holder = StateDirectoryLock.holder(of: config.stateDirectory) else { return .notRunning(path: path) }
                return .failed(unanswered(config, pid: holder.pid))
            }
            return .failed("cannot reach gattway on \(path): \(String(cString: strerror(code)))")
        }
        var request = request
        request.stateDirectory = config.stateDirectory
        let line = ControlLine.encode(request)
        let sent = line.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == line.count else { return .failed("cannot send to gattway on \(path): \(String(cString: strerror(errno)))") }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(UInt8(ascii: "\n")) {
            let count = read(descriptor, &buffer, buffer.count)
            guard count > 0 else {
                return .failed(
                    count == 0
                        ? "gattway on \(path) closed the connection without answering"
                        : "no answer from gattway on \(path): \(String(cString: strerror(errno)))")
            }
            answer += buffer[..<count]
        }
        do {
            return .answered(try ControlLine.decode(ControlResponse.self, from: answer.prefix { $0 != UInt8(ascii: "\n") }))
        } catch {
            return .failed("gattway on \(path) answered something unreadable: \(error)")
        }
    }
}
