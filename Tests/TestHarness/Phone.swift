import BluetoothCore
import Foundation
import Testing

/// One reply line from a phone.
public struct PhoneReply: @unchecked Sendable {
    public let object: [String: Any]
    public var ok: Bool { object["ok"] as? Bool ?? false }
    public var error: String? { object["error"] as? String }
    public subscript(key: String) -> Any? { object[key] }
    public func string(_ key: String) -> String? { object[key] as? String }
    public func int(_ key: String) -> Int? { object[key] as? Int }
    public func bytes(_ key: String) -> [UInt8]? { string(key).flatMap { [UInt8](hexString: $0) } }
}

/// A scriptable phone (Tests/harness/phone.py): a Bumble central on the virtual controller.
public final class Phone: @unchecked Sendable {
    public let process = Process()
    private let input: FileHandle
    private let reader: LineReader
    /// The phone's own (random static) Bluetooth address, as gattway reports centrals.
    public let address: String

    public init(controllerPort: Int) async throws {
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
        let ready = try await Self.readReply(from: reader)
        guard ready.ok, let address = ready.string("address") else {
            throw Harness.Unavailable(description: "the phone did not start: \(ready.object)")
        }
        self.address = address
    }

    private static func readReply(from reader: LineReader) async throws -> PhoneReply {
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
    public func run(
        _ command: String, _ arguments: [String: any Sendable] = [:],
        timeout: Duration = .seconds(30)
    ) async throws -> PhoneReply {
        var request: [String: Any] = arguments
        request["cmd"] = command
        var data = try JSONSerialization.data(withJSONObject: request)
        data.append(0x0A)
        input.write(data)
        let watchdog = Task { [process] in
            try await Task.sleep(for: timeout)
            // SIGKILL: a child can inherit a blocked SIGTERM from the test process's threads
            // (ServiceLifecycle blocks it), and then a phone that never answers is never ended.
            Glibc.kill(process.processIdentifier, SIGKILL)
        }
        defer { watchdog.cancel() }
        do {
            return try await Self.readReply(from: reader)
        } catch {
            throw Harness.Unavailable(description: "phone \(command) got no answer within \(timeout): \(error)")
        }
    }

    /// Like `run`, but a failed command fails the test with the phone's error.
    @discardableResult
    public func expect(
        _ command: String, _ arguments: [String: any Sendable] = [:],
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> PhoneReply {
        let reply = try await run(command, arguments)
        #expect(reply.ok, "phone \(command) failed: \(reply.error ?? "?")", sourceLocation: sourceLocation)
        return reply
    }

    /// Writes `handle` each way a phone can, every value read back intact: a Write Request, a
    /// Write Command, and a 300-byte prepared write in three parts (each part echoed), executed.
    /// Returns the 300 bytes.
    @discardableResult
    public func expectEveryKindOfWriteReadBack(_ handle: Int, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [UInt8] {
        for (value, response) in [("68656c6c6f", true), ("776f726c64", false)] {
            try await expect("write", ["handle": handle, "value": value, "response": response], sourceLocation: sourceLocation)
            let read = try await expect("read", ["handle": handle], sourceLocation: sourceLocation)
            #expect(read.string("value") == value, sourceLocation: sourceLocation)
        }
        let written = (0..<300).map { UInt8(255 - $0 % 200) }
        for offset in stride(from: 0, to: 300, by: 100) {
            let part = Array(written[offset..<offset + 100]).hexString
            let echoed = try await expect("prepare", ["handle": handle, "offset": offset, "value": part], sourceLocation: sourceLocation)
            #expect(echoed.string("value") == part, sourceLocation: sourceLocation)
        }
        try await expect("execute", ["commit": true], sourceLocation: sourceLocation)
        let read = try await expect("read", ["handle": handle], sourceLocation: sourceLocation)
        #expect(read.bytes("value") == written, sourceLocation: sourceLocation)
        return written
    }

    /// Discovers the connected peripheral and returns the value handle of the characteristic
    /// `uuid` (as the phone prints it, e.g. `6E400002-B5A3-F393-E0A9-E50E24DC0001`).
    public func valueHandle(of uuid: String) async throws -> Int {
        let services = try await expect("discover")["services"] as? [[String: Any]] ?? []
        guard
            let characteristic = services.flatMap({ $0["characteristics"] as? [[String: Any]] ?? [] })
                .first(where: { ($0["uuid"] as? String)?.uppercased() == uuid.uppercased() }),
            let handle = characteristic["value_handle"] as? Int
        else {
            throw TestFailure("the phone found no characteristic \(uuid)")
        }
        return handle
    }

    public func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)  // see `run`: SIGTERM may be blocked in it
        // No waitUntilExit: it waits for Foundation's exit notice, which needs a thread of the
        // pool this may be blocking (two such waits deadlocked a full test run). Process reaps it.
    }

    deinit { kill() }
}
