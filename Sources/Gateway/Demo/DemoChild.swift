#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A helper process of `gattway demo` (mosquitto, the virtual controller, the phone), started with
/// every signal unblocked and at its default action. A Swift process running a ServiceGroup blocks
/// SIGTERM and SIGINT (they arrive through dispatch sources), and a signal mask survives exec: a
/// child started with Foundation's `Process` inherits it and never sees the SIGTERM that should
/// stop it. Each child gets a process group of its own: Ctrl-C in the terminal signals the
/// foreground group, and the helpers must stay up until the gateway has stopped in order (a
/// broker or controller vanishing first would make it log losses on the way out).
final class DemoChild: @unchecked Sendable {
    let pid: pid_t
    /// The child's stdin (write end) and stdout (read end), when started with `pipes`.
    let input: FileHandle?
    let output: FileHandle?

    init(executable: String, arguments: [String], pipes: Bool = false) throws {
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
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var stdinPipe: Pipe?
        var stdoutPipe: Pipe?
        if pipes {
            let toChild = Pipe()
            let fromChild = Pipe()
            posix_spawn_file_actions_adddup2(&actions, toChild.fileHandleForReading.fileDescriptor, 0)
            posix_spawn_file_actions_adddup2(&actions, fromChild.fileHandleForWriting.fileDescriptor, 1)
            stdinPipe = toChild
            stdoutPipe = fromChild
        }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard status == 0 else {
            throw DemoFailure("\(executable) did not start: \(String(cString: strerror(status)))")
        }
        self.pid = pid
        // The parent keeps only its own ends, so each side sees end of file when the other goes.
        try? stdinPipe?.fileHandleForReading.close()
        try? stdoutPipe?.fileHandleForWriting.close()
        input = stdinPipe?.fileHandleForWriting
        output = stdoutPipe?.fileHandleForReading
    }

    /// SIGTERM, then waits for the exit; a child still cleaning up after `grace` is killed, so
    /// Ctrl-C ends the whole demo within its 2 s.
    func stop(grace: Duration = .milliseconds(400)) {
        try? input?.close()
        kill(pid, SIGTERM)
        var status: Int32 = 0
        // Only here, on the way out: check for the exit every 10 ms until the grace period ends.
        let deadline = ContinuousClock.now + grace
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                return
            }
            usleep(10_000)
        }
    }
}

public struct DemoFailure: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
