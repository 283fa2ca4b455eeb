import Dispatch
import Foundation
import Testing

/// The Python side of the end-to-end tests (Tests/harness): the virtual controller and phones.
/// Python comes from `GATTWAY_PYTHON`, else `<package root>/.venv/bin/python3`; without it (or
/// without Bumble) the tests fail with a message saying so, never pass silently.
enum Harness {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    static let directory = packageRoot + "/Tests/harness"

    struct Unavailable: Error, CustomStringConvertible {
        let description: String
    }

    static func python() throws -> String {
        let path = ProcessInfo.processInfo.environment["GATTWAY_PYTHON"] ?? packageRoot + "/.venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Unavailable(description: """
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
            throw Unavailable(description: """
                \(path) cannot import bumble and cryptography; install them: \
                \(path) -m pip install bumble==0.0.236
                """)
        }
        return path
    }
}

/// Reads lines from a pipe on a dispatch queue, so waiting never blocks Swift's cooperative pool.
/// The unit-only Debian 13 stage (Tests/userland/debian13.sh sets GATTWAY_UNIT_ONLY) has no Bumble;
/// everywhere else a missing Bumble is a failure, never a skip.
let integrationTestsStandAside = ProcessInfo.processInfo.environment["GATTWAY_UNIT_ONLY"] != nil
let unitOnlyReason: Comment = "GATTWAY_UNIT_ONLY is set: the Bumble tests run in the main stage"

final class LineReader: @unchecked Sendable {
    private let handle: FileHandle
    private let queue = DispatchQueue(label: "gattway.tests.lines")
    private var buffer = Data()

    init(_ handle: FileHandle) { self.handle = handle }

    /// The next line, or nil at end of file.
    func next() async -> String? {
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

/// The virtual controller process (Tests/harness/virtual_controller.py).
final class VirtualController: @unchecked Sendable {
    let process = Process()
    let lifeline = Pipe()
    let tcpPort: Int
    /// The kernel adapter index (hciN) of the controller attached through /dev/vhci, when started
    /// with `--vhci`.
    let kernelAdapter: UInt16?
    let logPath: String

    /// Starts a controller listening on `port` (0: any free port).
    init(port: Int = 0, extraArguments: [String] = []) async throws {
        let python = try Harness.python()
        logPath = NSTemporaryDirectory() + "gattway-vc-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Harness.directory + "/virtual_controller.py", "--tcp-port", String(port),
                             "--exit-with-stdin"] + extraArguments
        let output = Pipe()
        // The controller exits when this pipe closes, so it never outlives the test process.
        process.standardInput = lifeline
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        let reader = LineReader(output.fileHandleForReading)
        guard let line = await reader.next(), line.hasPrefix("READY "),
              let portText = line.split(separator: " ").first(where: { $0.hasPrefix("tcp=") })?.dropFirst(4),
              let actual = Int(portText) else {
            process.terminate()
            throw Harness.Unavailable(description: "the virtual controller did not start; see \(logPath)")
        }
        tcpPort = actual
        kernelAdapter = line.split(separator: " ").first { $0.hasPrefix("hci=") }.flatMap { UInt16($0.dropFirst(4)) }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// One reply line from a phone.
struct PhoneReply: @unchecked Sendable {
    let object: [String: Any]
    var ok: Bool { object["ok"] as? Bool ?? false }
    var error: String? { object["error"] as? String }
    subscript(key: String) -> Any? { object[key] }
    func string(_ key: String) -> String? { object[key] as? String }
    func int(_ key: String) -> Int? { object[key] as? Int }
    func bytes(_ key: String) -> [UInt8]? { string(key).flatMap { [UInt8](hexString: $0) } }
}

/// A scriptable phone (Tests/harness/phone.py): a Bumble central on the virtual controller.
final class Phone: @unchecked Sendable {
    let process = Process()
    private let input: FileHandle
    private let reader: LineReader

    init(controllerPort: Int) async throws {
        let python = try Harness.python()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Harness.directory + "/phone.py", "tcp:127.0.0.1:\(controllerPort)"]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.standardError
        try process.run()
        input = stdin.fileHandleForWriting
        reader = LineReader(stdout.fileHandleForReading)
        let ready = try await readReply()
        guard ready.ok else { throw Harness.Unavailable(description: "the phone did not start: \(ready.object)") }
    }

    private func readReply() async throws -> PhoneReply {
        guard let line = await reader.next() else {
            throw Harness.Unavailable(description: "the phone exited")
        }
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw Harness.Unavailable(description: "the phone answered \(line)")
        }
        return PhoneReply(object: object)
    }

    /// Sends one command and waits for its one reply. A phone that does not answer within
    /// `timeout` is killed, which ends the wait with an error naming the command.
    @discardableResult
    func run(_ command: String, _ arguments: [String: any Sendable] = [:],
             timeout: Duration = .seconds(30)) async throws -> PhoneReply {
        var request: [String: Any] = arguments
        request["cmd"] = command
        var data = try JSONSerialization.data(withJSONObject: request)
        data.append(0x0A)
        input.write(data)
        let watchdog = Task { [process] in
            try await Task.sleep(for: timeout)
            process.terminate()
        }
        defer { watchdog.cancel() }
        do {
            return try await readReply()
        } catch {
            throw Harness.Unavailable(description: "phone \(command) got no answer within \(timeout): \(error)")
        }
    }

    /// Like `run`, but a failed command fails the test with the phone's error.
    @discardableResult
    func expect(_ command: String, _ arguments: [String: any Sendable] = [:],
                sourceLocation: SourceLocation = #_sourceLocation) async throws -> PhoneReply {
        let reply = try await run(command, arguments)
        #expect(reply.ok, "phone \(command) failed: \(reply.error ?? "?")", sourceLocation: sourceLocation)
        return reply
    }

    func kill() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { kill() }
}
