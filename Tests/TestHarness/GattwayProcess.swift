import Foundation

/// The built `gattway` executable, run as a child process with its output captured. Waiting
/// blocks on a condition signalled by the pipes and the exit, never by polling.
public final class GattwayProcess: @unchecked Sendable {
    /// `gattway` is built next to the test bundle (both in the build directory), unless
    /// `GATTWAY_EXECUTABLE` names another: the arm64 stage (Tests/deploy/arm64-test.sh) runs the
    /// cross-built package's binary under qemu-user that way.
    public static let gattway: URL = {
        if let path = ProcessInfo.processInfo.environment["GATTWAY_EXECUTABLE"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return executable.deletingLastPathComponent().appendingPathComponent("gattway")
    }()

    private let arguments: [String]
    private let environment: [String: String]
    private let condition = NSCondition()
    private var stdoutData = Data()
    private var stderrData = Data()
    private var openStreams = 2
    private var exitStatus: Int32?
    private let outPipe = Pipe()
    private let errPipe = Pipe()
    public private(set) var pid: pid_t = 0

    /// `environment` is added to the test's own (without `JOURNAL_STREAM` and `NOTIFY_SOCKET`);
    /// `journalStandardError` makes the child's stderr look like systemd's journal stream.
    public init(_ arguments: [String], environment: [String: String] = [:], journalStandardError: Bool = false) {
        self.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged.removeValue(forKey: "JOURNAL_STREAM")
        merged.removeValue(forKey: "NOTIFY_SOCKET")
        merged.merge(environment) { _, new in new }
        if journalStandardError { merged["JOURNAL_STREAM"] = standardErrorIdentityOf(errPipe) }
        self.environment = merged
    }

    /// Starts it in the package root (relative configuration paths), as the leader of a process
    /// group of its own (as a shell starts a job), with no signal blocked. Spawned and reaped here
    /// rather than through Foundation's `Process`, whose exit notice needs a dispatch worker: with
    /// the test process's threads busy it arrived up to 30 s late.
    public func start() throws {
        // The shell changes directory and replaces itself with gattway: the pid is gattway's.
        let command = ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, Harness.packageRoot, Self.gattway.path] + arguments
        let spawned = try spawnWithDefaultSignals(command, environment: environment, ownProcessGroup: true) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, outPipe.fileHandleForWriting.fileDescriptor, 1)
            posix_spawn_file_actions_adddup2(&actions, errPipe.fileHandleForWriting.fileDescriptor, 2)
            posix_spawn_file_actions_addclose(&actions, outPipe.fileHandleForReading.fileDescriptor)
            posix_spawn_file_actions_addclose(&actions, errPipe.fileHandleForReading.fileDescriptor)
        }
        pid = spawned
        try outPipe.fileHandleForWriting.close()
        try errPipe.fileHandleForWriting.close()
        drain(outPipe.fileHandleForReading, isError: false)
        drain(errPipe.fileHandleForReading, isError: true)
        Thread.detachNewThread { [self] in
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) < 0 && errno == EINTR {}
            // As a shell reports it: the exit code, or the terminating signal's number.
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
            condition.lock()
            exitStatus = code
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

    public var stdout: String { condition.lock(); defer { condition.unlock() }; return String(decoding: stdoutData, as: UTF8.self) }
    public var stderr: String { condition.lock(); defer { condition.unlock() }; return String(decoding: stderrData, as: UTF8.self) }

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

    /// SIGTERM, unless it has exited (and so may have been reaped, its pid free for reuse).
    public func stop() {
        condition.lock()
        defer { condition.unlock() }
        if pid > 0, exitStatus == nil { kill(pid, SIGTERM) }
    }

    /// Runs to completion: (status, stdout, stderr).
    public static func run(_ arguments: [String], timeout: TimeInterval = 30) throws -> (status: Int32?, stdout: String, stderr: String) {
        let child = GattwayProcess(arguments)
        try child.start()
        let status = child.waitForExit(timeout: timeout)
        if status == nil { child.stop() }
        return (status, child.stdout, child.stderr)
    }
}

/// `dev:ino` of a pipe, as systemd names the journal stream in `JOURNAL_STREAM`.
private func standardErrorIdentityOf(_ pipe: Pipe) -> String {
    var status = stat()
    fstat(pipe.fileHandleForWriting.fileDescriptor, &status)
    return "\(status.st_dev):\(status.st_ino)"
}
