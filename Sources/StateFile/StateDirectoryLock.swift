#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One running gattway per state directory. Two processes on the same directory would overwrite
/// each other's counter totals, bonds and MQTT outbox (and, with the same MQTT client id, take
/// turns throwing each other off the broker), so the second one refuses to start instead.
///
/// The lock is an `flock` on `<state_dir>/gattway.lock`, which holds the owner's pid for the
/// message a refused process prints. The kernel drops the lock when the process ends however it
/// ends, so a crash leaves no stale lock behind; the file itself stays.
public final class StateDirectoryLock: Sendable {
    public static let fileName = "gattway.lock"

    public let path: String
    private let descriptor: Int32

    /// Takes the lock of `directory`, creating the directory (mode 0700) when it is missing;
    /// throws `.held` when another process keeps it (`takeExclusively`).
    public init(directory: String) throws(StateDirectoryLockError) {
        path = directory + "/" + Self.fileName
        // Last, so that a failure leaves nothing for deinit to close.
        descriptor = try Self.lock(path, in: directory)
    }

    deinit { close(descriptor) }

    /// The locked lock file's descriptor, which holds our pid.
    private static func lock(_ path: String, in directory: String) throws(StateDirectoryLockError) -> Int32 {
        do {
            try StateFile.makeDirectory(directory)
        } catch {
            throw .unusable(error)
        }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw .unusable(StateFileError(path: path, operation: "open", errno: errno)) }
        // Whoever runs gattway on this directory next (the service's user after root) opens it too.
        guard StateFile.adoptOwner(descriptor, of: directory) else {
            let failure = StateFileError(path: path, operation: "chown", errno: errno)
            close(descriptor)
            throw .unusable(failure)
        }
        guard takeExclusively(descriptor) else {
            let code = errno
            let owner = Self.owner(of: descriptor)
            close(descriptor)
            guard code == EWOULDBLOCK else {
                throw .unusable(StateFileError(path: path, operation: "lock", errno: code))
            }
            throw .held(directory: directory, pid: owner)
        }
        let pid = Array("\(getpid())\n".utf8)
        guard ftruncate(descriptor, 0) == 0,
            pid.withUnsafeBytes({ pwrite(descriptor, $0.baseAddress, $0.count, 0) }) == pid.count
        else {
            let failure = StateFileError(path: path, operation: "write", errno: errno)
            close(descriptor)
            throw .unusable(failure)
        }
        return descriptor
    }

    /// Takes the lock without blocking, trying again for up to 200 ms: a holder that lets go at
    /// once (the `holder` probe, a `gattway bonds` edit) is waited for, a running gattway is not.
    private static func takeExclusively(_ descriptor: Int32) -> Bool {
        for attempt in 1...10 {
            if flock(descriptor, LOCK_EX | LOCK_NB) == 0 { return true }
            guard errno == EWOULDBLOCK, attempt < 10 else { return false }
            usleep(20_000)
        }
        return false
    }

    /// Whether a process holds the lock of `directory` now: its pid (when the lock file says),
    /// or nil when none does, or when the lock file cannot be opened (no gattway ran there, or
    /// this user may not read it). Creates nothing; the probe is a shared lock taken and dropped
    /// at once (a gattway starting in that instant waits for it).
    public static func holder(of directory: String) -> Holder? {
        let descriptor = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 { return nil }
        return errno == EWOULDBLOCK ? Holder(pid: owner(of: descriptor)) : nil
    }

    /// The process holding a state directory's lock.
    public struct Holder: Equatable, Sendable {
        /// As the lock file says; nil when it cannot be read.
        public let pid: pid_t?
    }

    /// The pid the lock's owner wrote, when it is readable.
    private static func owner(of descriptor: Int32) -> pid_t? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let digits = buffer[..<count].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
        return pid_t(String(decoding: digits, as: UTF8.self))
    }
}

/// Why `StateDirectoryLock` could not be taken.
public enum StateDirectoryLockError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Another process holds it; its pid when the lock file says.
    case held(directory: String, pid: pid_t?)
    /// The directory or the lock file could not be made, opened or written.
    case unusable(StateFileError)

    public var description: String {
        switch self {
        case .held(let directory, let pid):
            "state directory \(directory) is in use by another gattway"
                + (pid.map { " (pid \($0))" } ?? "")
                + "; stop it first, or give this one a state_dir of its own"
        case .unusable(let error): "state directory: \(error)"
        }
    }
}
