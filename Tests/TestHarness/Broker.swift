import DevelopmentHarness
import Foundation

/// A real mosquitto on a free loopback port with a generated configuration. Stopped (SIGTERM,
/// then SIGKILL) by `stop()` and on deinit, so no broker outlives its test.
public final class Broker: @unchecked Sendable {
    public static let executable = "/usr/sbin/mosquitto"
    public private(set) var port: Int
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
        // A free port is free only when it was looked at: another process (a test running in
        // parallel) may take it before mosquitto binds it. Then another port is tried.
        for attempt in 1...5 {
            let text = """
                per_listener_settings true
                \(persistence)
                log_dest stderr
                log_type error
                log_type information
                user root
                listener \(port) 127.0.0.1
                \(extra)

                """
            try text.write(to: configuration, atomically: true, encoding: .utf8)
            do {
                try start()
                return
            } catch let failure as TestFailure where failure.description.contains("Address already in use") && attempt < 5 {
                port = try freeLoopbackPort()
            }
        }
    }

    /// Returns once this mosquitto says it is running, which it says only after binding its own
    /// listener. "The port accepts connections" is not enough: two tests can be handed the same
    /// free port, and the second test's broker, failing to bind, would find the first one's there
    /// and share it (and its retained messages) without a word.
    public func start() throws {
        let log = directory.appendingPathComponent("mosquitto.log")
        let offset = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
        pid = try spawnWithDefaultSignals(Self.executable, ["-c", configuration.path], stderr: log.path)
        let deadline = Date().addingTimeInterval(10)
        while true {
            let output = Self.text(of: log, from: offset)
            if output.contains(" running") { return }
            guard isRunning, Date() < deadline else {
                stop()
                throw TestFailure("mosquitto did not start on port \(port): \(Self.text(of: log, from: offset))")
            }
            usleep(20_000)  // waiting for an external process to say it is listening
        }
    }

    /// What mosquitto wrote to `log` since `offset` (the same file collects every start's lines).
    private static func text(of log: URL, from offset: Int) -> String {
        guard let data = try? Data(contentsOf: log), data.count > offset else { return "" }
        return String(decoding: data.dropFirst(offset), as: UTF8.self)
    }

    /// SIGTERM (mosquitto saves its persistence database on it), then reap.
    /// Stops the broker without closing anything (SIGSTOP): its connections stay up, and it
    /// takes no message until `resume()`.
    public func pause() {
        if let pid { kill(pid, SIGSTOP) }
    }

    public func resume() {
        if let pid { kill(pid, SIGCONT) }
    }

    public func stop() {
        guard let pid else { return }
        kill(pid, SIGTERM)
        kill(pid, SIGCONT)  // a paused broker acts on the SIGTERM only once it runs again
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

/// Starts `executable` (mosquitto, which must see SIGTERM) with stdin and stdout /dev/null and
/// stderr appended to the file `stderr`.
private func spawnWithDefaultSignals(_ executable: String, _ arguments: [String], stderr: String) throws -> pid_t {
    try spawnWithDefaultSignals([executable] + arguments) { actions in
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_APPEND, 0o644)
    }
}
