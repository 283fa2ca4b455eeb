import Foundation

/// A real mosquitto on a free loopback port with a generated configuration. Stopped (SIGTERM,
/// then SIGKILL) by `stop()` and on deinit, so no broker outlives its test.
public final class Broker: @unchecked Sendable {
    public static let executable = "/usr/sbin/mosquitto"
    public let port: Int
    public let directory: URL
    private let configuration: URL
    private var pid: pid_t?

    /// `listener` lines are generated; `extra` is appended to the listener's section.
    /// `persistent`: sessions survive a broker restart (saved on shutdown).
    public init(extra: String = "allow_anonymous true", persistent: Bool = false) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.executable) else {
            throw TestFailure("mosquitto is not installed (\(Self.executable) missing): apt-get install mosquitto mosquitto-clients")
        }
        port = try freeLoopbackPort()
        directory = try temporaryDirectory("broker")
        configuration = directory.appendingPathComponent("mosquitto.conf")
        let persistence = persistent ? "persistence true\npersistence_location \(directory.path)/" : "persistence false"
        let text = """
            per_listener_settings true
            \(persistence)
            log_dest stderr
            log_type error
            user root
            listener \(port) 127.0.0.1
            \(extra)

            """
        try text.write(to: configuration, atomically: true, encoding: .utf8)
        try start()
    }

    public func start() throws {
        let log = directory.appendingPathComponent("mosquitto.log")
        pid = try spawnWithDefaultSignals(Self.executable, ["-c", configuration.path], stderr: log.path)
        let deadline = Date().addingTimeInterval(10)
        while !portAcceptsConnections(port) {
            guard isRunning, Date() < deadline else {
                let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                stop()
                throw TestFailure("mosquitto did not start on port \(port): \(output)")
            }
            usleep(20_000)  // waiting for an external process to open its port
        }
    }

    /// SIGTERM (mosquitto saves its persistence database on it), then reap.
    public func stop() {
        guard let pid else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        self.pid = nil
    }

    private var isRunning: Bool {
        guard let pid else { return false }
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    deinit { stop() }
}

/// Starts `executable` with an empty signal mask and default signal handlers. Foundation's
/// `Process` passes on the test runner's blocked signals, and mosquitto would then never see
/// SIGTERM. stdin and stdout are /dev/null, stderr is appended to the file `stderr`.
public func spawnWithDefaultSignals(_ executable: String, _ arguments: [String], stderr: String) throws -> pid_t {
    try spawnWithDefaultSignals([executable] + arguments) { actions in
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    }
}

/// Starts `command` (the executable's path first) with an empty signal mask and default signal
/// handlers; `environment` replaces the test's own when given, `ownProcessGroup` makes it the
/// leader of a new group (as a shell starts a job), `files` sets up its descriptors.
public func spawnWithDefaultSignals(
    _ command: [String], environment: [String: String]? = nil, ownProcessGroup: Bool = false,
    files: (inout posix_spawn_file_actions_t) -> Void
) throws -> pid_t {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var empty = sigset_t()
    sigemptyset(&empty)
    posix_spawnattr_setsigmask(&attributes, &empty)
    var all = sigset_t()
    sigfillset(&all)
    posix_spawnattr_setsigdefault(&attributes, &all)
    var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
    if ownProcessGroup {
        posix_spawnattr_setpgroup(&attributes, 0)
        flags |= POSIX_SPAWN_SETPGROUP
    }
    posix_spawnattr_setflags(&attributes, Int16(flags))
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    files(&actions)
    let argv = command.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
    defer { envp?.forEach { free($0) } }
    var pid: pid_t = 0
    let rc =
        envp == nil
        ? posix_spawn(&pid, command[0], &actions, &attributes, argv, environ)
        : posix_spawn(&pid, command[0], &actions, &attributes, argv, &envp!)
    guard rc == 0 else { throw TestFailure("cannot start \(command[0]): \(String(cString: strerror(rc)))") }
    return pid
}
