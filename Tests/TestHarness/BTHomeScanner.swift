import BluetoothCore
import Foundation

/// One advertisement bthome-ble accepted (Tests/harness/bthome_scanner.py prints them).
public struct BTHomePacket: @unchecked Sendable, CustomStringConvertible {
    public let object: [String: Any]
    /// False for a packet bthome-ble dropped (only `BTHomeScanner.decode` reports those).
    public var accepted: Bool { object["accepted"] as? Bool ?? false }
    public var address: String { object["address"] as? String ?? "" }
    public var advertisingData: String { object["adv_data"] as? String ?? "" }
    public var packetID: Int? { (object["packet_id"] as? Double).map { Int($0) } }
    public var encrypted: Bool { object["encrypted"] as? Bool ?? false }
    public var counter: Int? { (object["counter"] as? Double).map { Int($0) } }
    public var bindKeyVerified: Bool { object["bindkey_verified"] as? Bool ?? false }
    /// bthome-ble's sensor keys (`temperature`, `humidity`, `count`, …) and values.
    public var sensors: [String: Double] { object["sensors"] as? [String: Double] ?? [:] }
    public var binarySensors: [String: Bool] { object["binary_sensors"] as? [String: Bool] ?? [:] }
    /// Events fired: `button` → `press`, `double_press`, …
    public var events: [String: String] { object["events"] as? [String: String] ?? [:] }
    /// Scan responses the scanner received so far: it scans passively, so none.
    public var scanResponses: Int { object["scan_responses"] as? Int ?? -1 }
    public var description: String { "\(object)" }
}

/// A passive BTHome receiver on the virtual link: a Bumble scanner feeding bthome-ble, the parser
/// Home Assistant's BTHome integration uses (Tests/harness/bthome_scanner.py).
public final class BTHomeScanner: @unchecked Sendable {
    public let process = Process()
    private let input = Pipe()
    private let reader: LineReader

    /// The interpreter, checked to have bthome-ble.
    static func python() async throws -> String {
        let python = try Harness.python()
        let check = try await ChildProcess([python, "-c", "import bthome_ble, habluetooth"]).runToCompletion(timeout: 60)
        guard check.status == 0 else {
            throw Harness.Unavailable(
                description: """
                    \(python) cannot import bthome_ble: install it with deploy/dev/install-deps.sh \
                    (or \(python) -m pip install bthome-ble) (\(check.stderr))
                    """)
        }
        return python
    }

    /// bthome-ble's reading of `packets` (BTHome service data after the UUID), in order, as one
    /// device's at `address` ("AA:BB:…"), without a radio: one result per packet.
    public static func decode(_ packets: [[UInt8]], address: String, bindKey: String? = nil) async throws -> [BTHomePacket] {
        let arguments =
            [try await python(), Harness.directory + "/bthome_scanner.py", "--decode", address]
            + (bindKey.map { ["--bindkey", $0] } ?? []) + packets.flatMap { ["--packet", $0.hexString] }
        let result = try await ChildProcess(arguments).runToCompletion(timeout: 60)
        guard result.status == 0 else { throw TestFailure("bthome_scanner.py --decode failed: \(result.stderr)") }
        return try result.stdout.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestFailure("bthome_scanner.py --decode printed \(line)")
            }
            return BTHomePacket(object: object)
        }
    }

    /// `bindKey`: 32 hex digits, for encrypted advertisements.
    public init(controllerPort: Int, bindKey: String? = nil) async throws {
        let python = try await Self.python()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [Harness.directory + "/bthome_scanner.py", "tcp:127.0.0.1:\(controllerPort)"]
            + (bindKey.map { ["--bindkey", $0] } ?? [])
        let output = Pipe()
        // The scanner runs until this pipe closes, so it never outlives the test process.
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        reader = LineReader(output.fileHandleForReading)
        // Lines before "ready" (none are expected) are kept for the error, not taken for failure.
        var before: [String] = []
        while let line = await reader.next() {
            if line.contains("\"ready\": true") { return }
            before.append(line)
        }
        let state =
            process.isRunning
            ? "still running" : "exited (status \(process.terminationStatus), reason \(process.terminationReason.rawValue))"
        throw TestFailure(
            "the BTHome scanner did not start: its output ended, the process \(state); it printed: \(before)")
    }

    /// The next accepted advertisement for which `matches` holds (earlier ones are passed over);
    /// nil when none comes within `timeout` (the scanner is then stopped).
    public func packet(
        within timeout: Duration, where matches: (BTHomePacket) -> Bool = { _ in true }
    ) async throws -> BTHomePacket? {
        let watchdog = Task { [process] in
            try await Task.sleep(for: timeout)
            Glibc.kill(process.processIdentifier, SIGKILL)  // ends the wait: the pipe closes
        }
        defer { watchdog.cancel() }
        while let line = await reader.next() {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw TestFailure("the BTHome scanner printed \(line)")
            }
            let packet = BTHomePacket(object: object)
            if matches(packet) { return packet }
        }
        return nil
    }

    /// Drops what was received so far (say, the packets of a gattway that has since stopped).
    public func discardReceived() {
        reader.discardQueued()
    }

    public func stop() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)  // see Phone.kill
    }

    deinit { stop() }
}
