import DevelopmentHarness
import Foundation

/// A command run as a child process with its output captured: how the tests run a program
/// (`gattway` through `GattwayProcess`, the probes, Python scripts, openssl, the mosquitto
/// clients). Spawned through `spawnWithDefaultSignals` and reaped here rather than through
/// Foundation's `Process`, whose exit notice needs a dispatch worker: with the test process's
/// threads busy it arrived up to 30 s late, and `waitUntilExit` on a pool thread could deadlock a
/// run. Waiting blocks on a condition signalled by the pipes and the exit, never by polling.
/// (The Python peers `Phone` and `VirtualController` talk over stdin and stdout lines and still
/// run as `Process`, never waited for.)
public class ChildProcess: @unchecked Sendable {
    private let command: [String]
    /// Replaces the test's own environment when set; `GattwayProcess` adds to it before `start`.
    var environment: [String: String]?
    private let directory: String?
    private let ownProcessGroup: Bool
    private let condition = NSCondition()
    private var stdoutData = Data()
    private var stderrData = Data()
    private var openStreams = 2
    private var exitStatus: Int32?
    private var endedBySignal = false
    private let outPipe = Pipe()
    private let errPipe = Pipe()
    public private(set) var pid: pid_t = 0

    /// `command` is the executable's path, then its arguments. `environment` replaces the test's
    /// own when given; `directory` is where it starts (default: the test's own);
    /// `ownProcessGroup` makes it the leader of a process group of its own (as a shell starts a job).
    public init(
        _ command: [String], environment: [String: String]? = nil, directory: String? = nil,
        ownProcessGroup: Bool = false
    ) {
        self.command = command
        self.environment = environment
        self.directory = directory
        self.ownProcessGroup = ownProcessGroup
    }

    /// Starts it with no signal blocked, stdin /dev/null, stdout and stderr into pipes.
    public func start() throws {
        // The shell changes directory and replaces itself with the command: the pid is the command's.
        let spawned = directory.map { ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, $0] + command } ?? command
        let child = try spawnWithDefaultSignals(spawned, environment: environment, ownProcessGroup: ownProcessGroup) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, outPipe.fileHandleForWriting.fileDescriptor, 1)
            posix_spawn_file_actions_adddup2(&actions, errPipe.fileHandleForWriting.fileDescriptor, 2)
            posix_spawn_file_actions_addclose(&actions, outPipe.fileHandleForReading.fileDescriptor)
            posix_spawn_file_actions_addclose(&actions, errPipe.fileHandleForReading.fileDescriptor)
        }
        pid = child
        try outPipe.fileHandleForWriting.close()
        try errPipe.fileHandleForWriting.close()
        drain(outPipe.fileHandleForReading, isError: false)
        drain(errPipe.fileHandleForReading, isError: true)
        Thread.detachNewThread { [self] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
            // As a shell reports it: the exit code, or the terminating signal's number.
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
            condition.lock()
            exitStatus = code
            endedBySignal = status & 0x7F != 0
            condition.broadcast()
            condition.unlock()
        }
    }

    /// One thread per pipe, blocked in read(2) until data or end of file.
    private func drain(_ handle: FileHandle, isError: Bool) {
        Thread.detachNewThread { [self] in
            while true {
                let data = handle.availableData
                condition.lock()
                if data.isEmpty { openStreams -= 1 } else if isError { stderrData.append(data) } else { stdoutData.append(data) }
                condition.broadcast()
                condition.unlock()
                if data.isEmpty { return }
            }
        }
    }

    /// `dev:ino` of its stderr pipe, as systemd names the journal stream in `JOURNAL_STREAM`.
    var standardErrorIdentity: String {
        var status = stat()
        fstat(errPipe.fileHandleForWriting.fileDescriptor, &status)
        return "\(status.st_dev):\(status.st_ino)"
    }

    public var stdout: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: stdoutData, as: UTF8.self)
    }
    public var stderr: String {
        condition.lock()
        defer { condition.unlock() }
        return String(decoding: stderrData, as: UTF8.self)
    }

    /// Whether it has not exited yet (or not been started).
    public var isRunning: Bool {
        condition.lock()
        defer { condition.unlock() }
        return exitStatus == nil
    }

    /// The signal that ended it; nil while it runs and when it exited by itself.
    public var terminatingSignal: Int32? {
        condition.lock()
        defer { condition.unlock() }
        return endedBySignal ? exitStatus : nil
    }

    /// Waits until `predicate` holds for (stdout, stderr, finished) or the timeout passes;
    /// `finished` means the process exited and both pipes reached end of file.
    @discardableResult
    public func wait(timeout: TimeInterval, until predicate: (String, String, Bool) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(
            String(decoding: stdoutData, as: UTF8.self), String(decoding: stderrData, as: UTF8.self),
            exitStatus != nil && openStreams == 0)
        {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    /// Waits for the exit with all output collected; nil on timeout.
    public func waitForExit(timeout: TimeInterval) -> Int32? {
        guard wait(timeout: timeout, until: { _, _, finished in finished }) else { return nil }
        condition.lock()
        defer { condition.unlock() }
        return exitStatus
    }

    public func signal(_ number: Int32) { kill(pid, number) }

    /// Signals its whole process group, as Ctrl-C in a terminal signals the foreground job.
    public func signalGroup(_ number: Int32) { kill(-pid, number) }

    /// Sends `signal`, unless it has exited (and so may have been reaped, its pid free for reuse).
    public func stop(_ signal: Int32 = SIGTERM) {
        condition.lock()
        defer { condition.unlock() }
        if pid > 0, exitStatus == nil { kill(pid, signal) }
    }

    /// Starts it and waits for its end: (status, stdout, stderr); the status is nil when it is
    /// still running after `timeout`, and it is then sent SIGTERM. Blocks the calling thread, but
    /// depends on no other: the exit and the output arrive on threads of their own. The default is
    /// for a command that ends by itself (`gattway check`, `status`): a full run on two cores has
    /// kept one from finishing within 30 s.
    public func runToCompletion(timeout: TimeInterval = 60) throws -> (status: Int32?, stdout: String, stderr: String) {
        try start()
        let status = waitForExit(timeout: timeout)
        if status == nil { stop() }
        return (status, stdout, stderr)
    }

    /// `runToCompletion` for async code: it waits on a thread of its own, so that a long run
    /// keeps none of the threads the other tests run on.
    public func runToCompletion(timeout: TimeInterval = 60) async throws -> (status: Int32?, stdout: String, stderr: String) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try self.runToCompletion(timeout: timeout) }) }
        }
    }

    /// Runs it to its end (see `runToCompletion`) and returns its stdout; fails with its output
    /// unless it exited 0 in time.
    @discardableResult
    public func runSucceeding(timeout: TimeInterval = 30) throws -> String {
        let result = try runToCompletion(timeout: timeout)
        guard result.status == 0 else {
            let status = result.status.map { "status \($0)" } ?? "no exit within \(Int(timeout)) s"
            throw TestFailure("\(command.joined(separator: " ")) failed (\(status)): \(result.stdout)\(result.stderr)")
        }
        return result.stdout
    }
}

/// The build directory SwiftPM runs the test binary from (`.build/<triple>/debug`) and builds the
/// package's executables into: `gattway` and the probes.
public let buildDirectory = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()

/// The path of the executable `name` built beside the tests; fails saying how to build it.
public func builtExecutable(_ name: String) throws -> String {
    let path = buildDirectory.appendingPathComponent(name).path
    guard FileManager.default.isExecutableFile(atPath: path) else {
        throw TestFailure("\(name) is not built next to the test binary (\(path)); run `swift build --build-tests`")
    }
    return path
}
