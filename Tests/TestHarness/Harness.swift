import Dispatch
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

    public static func python() throws -> String {
        let path = ProcessInfo.processInfo.environment["GATTWAY_PYTHON"] ?? packageRoot + "/.venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Unavailable(
                description: """
                    the end-to-end harness needs Python with Bumble 0.0.236: \(path) does not exist. \
                    Create it with deploy/dev/install-deps.sh (or python3 -m venv .venv && \
                    .venv/bin/pip install bumble==0.0.236 cryptography), or set GATTWAY_PYTHON
                    """)
        }
        let check = Process()
        check.executableURL = URL(fileURLWithPath: path)
        check.arguments = ["-c", "import bumble, cryptography"]
        check.standardError = FileHandle.nullDevice
        try check.run()
        check.waitUntilExit()
        guard check.terminationStatus == 0 else {
            throw Unavailable(
                description: """
                    \(path) cannot import bumble and cryptography; install them: \
                    \(path) -m pip install bumble==0.0.236
                    """)
        }
        return path
    }
}

/// The unit-only Debian 13 stage (Tests/userland/debian13.sh sets GATTWAY_UNIT_ONLY) has neither
/// Bumble nor mosquitto; everywhere else a missing peer is a failure, never a skip.
public let integrationTestsStandAside = ProcessInfo.processInfo.environment["GATTWAY_UNIT_ONLY"] != nil
public let unitOnlyReason: Comment = "GATTWAY_UNIT_ONLY is set: tests with Bumble or mosquitto run in the main stage"

/// Reads lines from a pipe on a dispatch queue, so waiting never blocks Swift's cooperative pool.
public final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private let queue = DispatchQueue(label: "gattway.tests.lines")
    private var buffer = Data()

    public init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or nil at end of file.
    public func next() async -> String? {
        await withCheckedContinuation { continuation in
            queue.async {
                while true {
                    if let newline = self.buffer.firstIndex(of: 0x0A) {
                        let line = self.buffer[self.buffer.startIndex..<newline]
                        self.buffer.removeSubrange(self.buffer.startIndex...newline)
                        continuation.resume(returning: String(decoding: line, as: UTF8.self))
                        return
                    }
                    let chunk = self.handle.availableData
                    if chunk.isEmpty {
                        continuation.resume(returning: nil)
                        return
                    }
                    self.buffer.append(chunk)
                }
            }
        }
    }
}
