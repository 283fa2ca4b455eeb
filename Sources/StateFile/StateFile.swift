#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way gattway persists a file under its state directory (bonds, counter totals, the
/// static address, the discovery record, trigger settings); the running service does it through
/// `StateFileWriter`, off the event loop, and the MQTT outbox's journal through `StateJournal`.
///
/// `write` replaces a file so that a crash or a power cut at any moment leaves either the old
/// contents or the new ones, complete: the bytes go to a temporary file beside the target
/// (created with the final mode, never wider), which is fsynced, renamed over the target, and
/// then the directory is fsynced so that the rename itself is on disk.
public enum StateFile {
    /// The contents of `path`, or nil when it does not exist.
    public static func read(_ path: String) throws(StateFileError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return nil }
            throw StateFileError(path: path, operation: "open", errno: errno)
        }
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StateFileError(path: path, operation: "read", errno: errno)
            }
            if count == 0 { return contents }
            contents += buffer[..<count]
        }
    }

    /// The text of a one-value file (a count, an address) without surrounding whitespace, or nil
    /// when it does not exist.
    public static func readValue(_ path: String) throws(StateFileError) -> String? {
        guard let bytes = try read(path) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
            let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(text[first...last])
    }

    /// Replaces `path` with `bytes`, atomically and durably (see the type's description). The
    /// directory is created (mode 0700) when missing; `mode` is the file's.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) throws(StateFileError) {
        let directory = directoryOf(path)
        try makeDirectory(directory)
        let temporary = path + ".tmp"
        // A leftover of a crash: O_EXCL below must create a fresh file with `mode`.
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw StateFileError(path: temporary, operation: "create", errno: errno) }
        guard adoptOwner(descriptor, of: directory) else {
            let code = errno
            close(descriptor)
            unlink(temporary)
            throw StateFileError(path: temporary, operation: "chown", errno: code)
        }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(descriptor)
                unlink(temporary)
                throw StateFileError(path: temporary, operation: "write", errno: code)
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            let code = errno
            close(descriptor)
            unlink(temporary)
            throw StateFileError(path: temporary, operation: "fsync", errno: code)
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw StateFileError(path: path, operation: "rename", errno: code)
        }
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else {
            throw StateFileError(path: directory, operation: "open", errno: errno)
        }
        defer { close(directoryDescriptor) }
        guard fsync(directoryDescriptor) == 0 else {
            throw StateFileError(path: directory, operation: "fsync", errno: errno)
        }
    }

    /// Creates `directory` and its missing parents with mode 0700, each owned like its parent
    /// (`adoptOwner`).
    static func makeDirectory(_ directory: String) throws(StateFileError) {
        if mkdir(directory, 0o700) != 0 {
            if errno == EEXIST { return }
            guard errno == ENOENT else { throw StateFileError(path: directory, operation: "create", errno: errno) }
            let parent = directoryOf(directory)
            guard parent != directory else { throw StateFileError(path: directory, operation: "create", errno: ENOENT) }
            try makeDirectory(parent)
            guard mkdir(directory, 0o700) == 0 else {
                if errno == EEXIST { return }
                throw StateFileError(path: directory, operation: "create", errno: errno)
            }
        }
        try adoptParentsOwner(directory)
    }

    private static func adoptParentsOwner(_ directory: String) throws(StateFileError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw StateFileError(path: directory, operation: "open", errno: errno) }
        defer { close(descriptor) }
        guard adoptOwner(descriptor, of: directoryOf(directory)) else {
            throw StateFileError(path: directory, operation: "chown", errno: errno)
        }
    }

    /// Gives the file behind `descriptor`, just created, the owner and group of `directory` when
    /// root created it: `sudo gattway bonds clear` with the service stopped must leave a
    /// `bonds.json` the service's own user can still read (0600), not one of root's. Any other
    /// user's files are its own already. False, with errno set, when the chown failed.
    static func adoptOwner(_ descriptor: Int32, of directory: String) -> Bool {
        guard geteuid() == 0 else { return true }
        var status = stat()
        guard stat(directory, &status) == 0 else { return false }
        guard status.st_uid != 0 || status.st_gid != 0 else { return true }
        return fchown(descriptor, status.st_uid, status.st_gid) == 0
    }

    /// `path` without its last component ("." for a bare name, "/" for a top-level entry).
    static func directoryOf(_ path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}

/// A state file operation that failed, with the path and the system's reason.
public struct StateFileError: Error, Hashable, Sendable, CustomStringConvertible {
    public let path: String
    /// What was being done: "open", "read", "create", "chown", "write", "fsync", "rename", "lock".
    public let operation: String
    public let errno: Int32

    public init(path: String, operation: String, errno: Int32) {
        self.path = path
        self.operation = operation
        self.errno = errno
    }

    public var description: String {
        "cannot \(operation) \(path): \(String(cString: strerror(errno)))"
    }
}
