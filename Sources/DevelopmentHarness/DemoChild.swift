#if canImport(Glibc)
import Glibc
#endif

/// A helper process of `gattway demo` (mosquitto, the virtual controller, the phone), started
/// through `spawnWithDefaultSignals`, in a process group of its own: Ctrl-C in the terminal
/// signals the foreground group, and the helpers must stay up until the gateway has stopped in
/// order (a broker or controller vanishing first would make it log losses on the way out).
final class DemoChild: @unchecked Sendable {
    let pid: pid_t
    /// The child's stdin (write end) and stdout (read end), when started with `pipes`; -1 when not.
    let input: Int32
    let output: Int32

    init(executable: String, arguments: [String], pipes: Bool = false) throws {
        // [read, write] ends, close-on-exec: the child gets only the dup2'ed copies.
        var toChild: [Int32] = [-1, -1]
        var fromChild: [Int32] = [-1, -1]
        if pipes {
            guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
                throw DemoFailure("cannot make pipes for \(executable): \(String(cString: strerror(errno)))")
            }
            for descriptor in toChild + fromChild { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        }
        let pid: pid_t
        do {
            pid = try spawnWithDefaultSignals([executable] + arguments, ownProcessGroup: true) { actions in
                guard pipes else { return }
                posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
                posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
            }
        } catch {
            for descriptor in toChild + fromChild where descriptor >= 0 { close(descriptor) }
            throw error
        }
        self.pid = pid
        // The parent keeps only its own ends, so each side sees end of file when the other goes.
        if pipes {
            close(toChild[0])
            close(fromChild[1])
        }
        input = toChild[1]
        output = fromChild[0]
    }

    deinit {
        if output >= 0 { close(output) }
    }

    /// Writes one line to the child's stdin; false once the child is gone.
    func writeLine(_ text: String) -> Bool {
        var bytes = Array((text + "\n").utf8)[...]
        while !bytes.isEmpty {
            let count = bytes.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            bytes = bytes.dropFirst(count)
        }
        return true
    }

    /// Blocks for the child's next stdout line (without its newline); nil at end of file.
    func readLine() -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
    }

    /// Read but not yet returned by `readLine` (only its one reader touches it).
    private var pending: [UInt8] = []

    /// SIGTERM, then waits for the exit; a child still cleaning up after `grace` is killed, so
    /// Ctrl-C ends the whole demo within its 2 s.
    func stop(grace: Duration = .milliseconds(400)) {
        if input >= 0 { close(input) }
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
