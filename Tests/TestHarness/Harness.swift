import Foundation
import Testing

/// The Python side of the end-to-end tests (Tests/harness): the virtual controller and phones.
/// Python comes from `GATTWAY_PYTHON`, else `<package root>/.venv/bin/python3`; without it (or
/// without Bumble) the tests fail with a message saying so, never pass silently.
public enum Harness {
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    public static let directory = packageRoot + "/Tests/harness"

    public struct Unavailable: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The checked interpreter; the check (a Python start that imports Bumble, about a second on a
    /// loaded machine, blocking its thread) runs once per test process, not once per controller
    /// or phone: dozens of them starved the cooperative pool that the other tests run on.
    public static func python() throws -> String { try checkedPython.get() }

    private static let checkedPython = Result { try checkPython() }

    private static func checkPython() throws -> String {
        let path = ProcessInfo.processInfo.environment["GATTWAY_PYTHON"] ?? packageRoot + "/.venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Unavailable(
                description: """
                    the end-to-end harness needs Python with Bumble 0.0.236: \(path) does not exist. \
                    Create it with deploy/dev/install-deps.sh (or python3 -m venv .venv && \
                    .venv/bin/pip install bumble==0.0.236 cryptography), or set GATTWAY_PYTHON
                    """)
        }
        let check = try ChildProcess([path, "-c", "import bumble, cryptography"]).runToCompletion(timeout: 60)
        guard check.status == 0 else {
            throw Unavailable(
                description: """
                    \(path) cannot import bumble and cryptography; install them: \
                    \(path) -m pip install bumble==0.0.236 (\(check.stderr))
                    """)
        }
        return path
    }
}

/// The unit-only Debian 13 stage (Tests/userland/debian13.sh sets GATTWAY_UNIT_ONLY) has no peer
/// for a test to talk to (no Python, Bumble or mosquitto); everywhere else a missing peer is a
/// failure, never a skip. Every such test stands aside with
/// `.disabled(if: integrationTestsStandAside, unitOnlyReason)`.
public let integrationTestsStandAside = ProcessInfo.processInfo.environment["GATTWAY_UNIT_ONLY"] != nil
public let unitOnlyReason: Comment = "GATTWAY_UNIT_ONLY is set: tests with Python, Bumble or mosquitto run in the main stage"

/// Reads lines from a pipe on a thread of its own, blocked in read(2). Not on a dispatch queue:
/// on Linux those share their worker threads with Swift's global executor, and a dozen phones'
/// pending reads left the other tests without threads for seconds.
public final class LineReader: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    private var ended = false
    private var waiter: CheckedContinuation<String?, Never>?

    public init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty {
                    deliver(nil)
                    return
                }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 0x0A) {
                    deliver(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...newline)
                }
            }
        }
    }

    /// A line to the waiting `next()`, or into the queue; nil is the end of file.
    private func deliver(_ line: String?) {
        lock.lock()
        if line == nil { ended = true }
        if let waiter {
            self.waiter = nil
            lock.unlock()
            waiter.resume(returning: line)
            return
        }
        if let line { lines.append(line) }
        lock.unlock()
    }

    /// Drops the lines received and not yet taken.
    public func discardQueued() {
        lock.lock()
        lines.removeAll()
        lock.unlock()
    }

    /// The next line, or nil at end of file. One caller at a time.
    public func next() async -> String? {
        await withCheckedContinuation { continuation in
            lock.lock()
            if !lines.isEmpty {
                let line = lines.removeFirst()
                lock.unlock()
                continuation.resume(returning: line)
            } else if ended {
                lock.unlock()
                continuation.resume(returning: nil)
            } else {
                waiter = continuation
                lock.unlock()
            }
        }
    }
}
