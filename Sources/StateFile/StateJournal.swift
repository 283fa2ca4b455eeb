import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An append-only journal under the state directory (the MQTT outbox's): records are appended on
/// the caller's thread, each in `write(2)` calls of its own that only reach the page cache, so a
/// crash can tear only the last record; its fsyncs and its compactions, which wait for the disk,
/// run on the state files' writer (`StateFileWriter`), in the order they were asked for.
///
/// A compaction replaces the journal whole, as `StateFile.write` replaces a file (temporary file,
/// fsync, rename, directory fsync), while records go on being appended: they go to the old
/// journal, and are kept aside, until the writer, holding the journal's lock for a page-cache
/// write and a rename (no fsync), appends them to the new one and renames it over the old. A crash
/// or a power cut at any moment leaves the old journal with every record appended so far, or the
/// new one with every record appended so far.
public final class StateJournal: Sendable {
    public let path: String
    private let writer: StateFileWriter

    private struct State {
        /// The journal's descriptor, open for appending; replaced (and the old one closed) only on
        /// the writer's thread, so an fsync there never meets a closed one.
        var descriptor: Int32
        /// The records appended since a compaction's contents were taken, until its rename; nil
        /// when no compaction is under way.
        var appendedDuringCompaction: [UInt8]?
        /// The completions of the fsync asked for and not started yet: later requests join it.
        var syncsWaiting: [StateFileWriter.Completion] = []
    }

    private let state: Mutex<State>

    /// Opens `path` for appending, creating it (mode 0600) when it does not exist. A journal whose
    /// last record was torn (a crash mid-append) gets a line break first, so the next record
    /// starts a line of its own.
    public init(path: String, writer: StateFileWriter) throws(StateFileError) {
        self.path = path
        self.writer = writer
        let descriptor = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw StateFileError(path: path, operation: "open", errno: errno) }
        guard StateFile.adoptOwner(descriptor, of: StateFile.directoryOf(path)) else {
            let code = errno
            close(descriptor)
            throw StateFileError(path: path, operation: "chown", errno: code)
        }
        var last: UInt8 = 0
        let size = lseek(descriptor, 0, SEEK_END)
        if size > 0, pread(descriptor, &last, 1, size - 1) == 1, last != UInt8(ascii: "\n") {
            do {
                try Self.write([UInt8(ascii: "\n")], to: descriptor, path: path)
            } catch {
                close(descriptor)
                throw error
            }
        }
        state = Mutex(State(descriptor: descriptor))
    }

    deinit {
        state.withLock { _ = close($0.descriptor) }
    }

    /// Appends `bytes` (whole records) to the journal.
    public func append(_ bytes: [UInt8]) throws(StateFileError) {
        try state.withLock { (state) throws(StateFileError) in
            try Self.write(bytes, to: state.descriptor, path: path)
            state.appendedDuringCompaction? += bytes
        }
    }

    /// Makes every record appended so far survive a power cut: an fsync on the writer's thread,
    /// after everything asked of the writer before (a compaction under way included), then
    /// `completion` there with nil or the error. Requests made while one waits join it.
    public func sync(completion: @escaping StateFileWriter.Completion) {
        let alreadyRequested = state.withLock { state in
            defer { state.syncsWaiting.append(completion) }
            return !state.syncsWaiting.isEmpty
        }
        guard !alreadyRequested else { return }
        writer.perform {
            let (descriptor, completions) = self.state.withLock { state in
                defer { state.syncsWaiting = [] }
                return (state.descriptor, state.syncsWaiting)
            }
            let failure = fsync(descriptor) == 0 ? nil : StateFileError(path: self.path, operation: "fsync", errno: errno)
            for completion in completions { completion(failure) }
        }
    }

    /// Replaces the journal by `records` (the records still needed, taken now) followed by
    /// whatever is appended from now until the writer renames it into place (see the type); then
    /// calls `completion` on the writer's thread with nil or the error. A failed compaction leaves
    /// the journal as it was, appends going on to it. False, and nothing done, while another
    /// compaction is under way (its records would miss what is appended between the two).
    public func compact(to records: [UInt8], completion: @escaping StateFileWriter.Completion) -> Bool {
        let started = state.withLock { state in
            guard state.appendedDuringCompaction == nil else { return false }
            state.appendedDuringCompaction = []
            return true
        }
        guard started else { return false }
        writer.perform { completion(self.replace(by: records)) }
        return true
    }

    /// On the writer's thread.
    private func replace(by records: [UInt8]) -> StateFileError? {
        let temporary = path + ".tmp"
        let directory = StateFile.directoryOf(path)
        unlink(temporary)
        let descriptor = open(temporary, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            return abandon(StateFileError(path: temporary, operation: "create", errno: errno), descriptor: -1)
        }
        guard StateFile.adoptOwner(descriptor, of: directory) else {
            return abandon(StateFileError(path: temporary, operation: "chown", errno: errno), descriptor: descriptor)
        }
        do {
            try Self.write(records, to: descriptor, path: temporary)
        } catch {
            return abandon(error, descriptor: descriptor)
        }
        guard fsync(descriptor) == 0 else {
            return abandon(StateFileError(path: temporary, operation: "fsync", errno: errno), descriptor: descriptor)
        }
        // The records appended meanwhile join the new journal, which replaces the old one, while
        // no append can come between.
        let replaced: Result<Int32, StateFileError> = state.withLock { state in
            do throws(StateFileError) {
                try Self.write(state.appendedDuringCompaction ?? [], to: descriptor, path: temporary)
            } catch {
                return .failure(error)
            }
            guard rename(temporary, path) == 0 else {
                return .failure(StateFileError(path: path, operation: "rename", errno: errno))
            }
            let old = state.descriptor
            state.descriptor = descriptor
            state.appendedDuringCompaction = nil
            return .success(old)
        }
        switch replaced {
        case .failure(let error):
            return abandon(error, descriptor: descriptor)
        case .success(let old):
            close(old)
        }
        guard fsync(descriptor) == 0 else { return StateFileError(path: path, operation: "fsync", errno: errno) }
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryDescriptor >= 0 else { return StateFileError(path: directory, operation: "open", errno: errno) }
        defer { close(directoryDescriptor) }
        guard fsync(directoryDescriptor) == 0 else {
            return StateFileError(path: directory, operation: "fsync", errno: errno)
        }
        return nil
    }

    /// A compaction that failed before its rename: the old journal stays, with every record.
    private func abandon(_ error: StateFileError, descriptor: Int32) -> StateFileError {
        if descriptor >= 0 { close(descriptor) }
        unlink(path + ".tmp")
        state.withLock { $0.appendedDuringCompaction = nil }
        return error
    }

    private static func write(_ bytes: [UInt8], to descriptor: Int32, path: String) throws(StateFileError) {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw StateFileError(path: path, operation: "write", errno: errno)
            }
            written += count
        }
    }
}
