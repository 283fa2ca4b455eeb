#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A private mosquitto for `gattway demo`: listens on loopback only, anonymous, nothing
/// persisted; its configuration lives in a temporary directory removed on `stop()`.
public final class DemoBroker: @unchecked Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case missing
        case notStarted(String)

        public var description: String {
            switch self {
            case .missing:
                "mosquitto is not installed: install it with `sudo apt-get install mosquitto` "
                    + "(the demo starts its own broker; the system service may stay disabled)"
            case .notStarted(let reason): "mosquitto did not start: \(reason)"
            }
        }
    }

    private let pid: pid_t
    private let directory: URL

    /// Where mosquitto is found: `$PATH`, then /usr/sbin (Debian installs it there, outside a
    /// normal user's PATH).
    public static func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let path = (environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin"]
        return path.map { "\($0)/mosquitto" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The broker's configuration file text.
    public static func configuration(port: UInt16) -> String {
        """
        listener \(port) 127.0.0.1
        allow_anonymous true
        persistence false
        log_dest stderr
        log_type error
        log_type warning

        """
    }

    public init(port: UInt16) throws {
        guard let executable = Self.executable() else { throw Failure.missing }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattway-demo-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("mosquitto.conf")
        try Self.configuration(port: port).write(to: file, atomically: true, encoding: .utf8)
        pid = try Self.spawn(executable, arguments: ["-c", file.path])
    }

    /// Starts mosquitto with every signal unblocked and at its default action. A Swift process
    /// running a ServiceGroup blocks SIGTERM and SIGINT (they arrive through dispatch sources),
    /// and a signal mask survives exec: a child started with Foundation's `Process` inherits it and
    /// never sees the SIGTERM that should stop it.
    private static func spawn(_ executable: String, arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, nil, &attributes, argv, environ)
        guard status == 0 else { throw Failure.notStarted(String(cString: strerror(status))) }
        return pid
    }

    /// Stops the broker (SIGTERM, then waits for it) and removes its configuration.
    public func stop() {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        try? FileManager.default.removeItem(at: directory)
    }
}
