import CSpawn
import Glibc

/// Starts `command` (the executable's path first) with an empty signal mask and every signal at
/// its default action, and returns its pid; the caller reaps it. How `gattway demo` starts its
/// helpers and the tests start theirs: a Swift process blocks signals it takes through dispatch
/// sources (a ServiceGroup's SIGTERM and SIGINT, the test runner's), a signal mask survives exec,
/// and a child started with Foundation's `Process` inherits it and never sees the SIGTERM that
/// should stop it.
///
/// `environment` replaces the caller's own when given; `ownProcessGroup` makes the child the
/// leader of a new group (as a shell starts a job), so a Ctrl-C to the terminal's foreground group
/// does not reach it; `files` sets up its descriptors 0 to 2. The child gets no other descriptor
/// of the caller: a pipe another thread is making for another child at the same moment would
/// otherwise stay open in this one, and that other child would see end of file only when this
/// one exits (Foundation's `Pipe` does not set close-on-exec).
public func spawnWithDefaultSignals(
    _ command: [String], environment: [String: String]? = nil, ownProcessGroup: Bool = false,
    files: (inout posix_spawn_file_actions_t) -> Void = { _ in }
) throws(SpawnFailure) -> pid_t {
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
    posix_spawn_file_actions_addclosefrom_np(&actions, 3)
    let argv = command.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
    defer { for pointer in envp ?? [] { free(pointer) } }
    var pid: pid_t = 0
    let status =
        envp == nil
        ? posix_spawn(&pid, command[0], &actions, &attributes, argv, environ)
        : posix_spawn(&pid, command[0], &actions, &attributes, argv, &envp!)
    guard status == 0 else { throw SpawnFailure(executable: command[0], code: status) }
    return pid
}

/// A child process that could not start: which program, and the system's reason.
public struct SpawnFailure: Error, CustomStringConvertible {
    public let executable: String
    public let code: Int32

    public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
}
