import Foundation

/// The virtual controller process (Tests/harness/virtual_controller.py).
public final class VirtualController: @unchecked Sendable {
    public let process = Process()
    let lifeline = Pipe()
    public let tcpPort: Int
    /// The kernel adapter index (hciN) of the controller attached through /dev/vhci, when started
    /// with `--vhci`.
    public let kernelAdapter: UInt16?
    public let logPath: String

    /// Starts a controller listening on `port` (0: any free port).
    public init(port: Int = 0, extraArguments: [String] = []) async throws {
        let python = try Harness.python()
        logPath = NSTemporaryDirectory() + "gattway-vc-\(UUID().uuidString).log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments =
            [
                Harness.directory + "/virtual_controller.py", "--tcp-port", String(port),
                "--exit-with-stdin"
            ] + extraArguments
        let output = Pipe()
        // The controller exits when this pipe closes, so it never outlives the test process.
        process.standardInput = lifeline
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        let reader = LineReader(output.fileHandleForReading)
        guard let line = await reader.next(), line.hasPrefix("READY "),
            let portText = line.split(separator: " ").first(where: { $0.hasPrefix("tcp=") })?.dropFirst(4),
            let actual = Int(portText)
        else {
            process.terminate()
            throw Harness.Unavailable(description: "the virtual controller did not start; see \(logPath)")
        }
        tcpPort = actual
        kernelAdapter = line.split(separator: " ").first { $0.hasPrefix("hci=") }.flatMap { UInt16($0.dropFirst(4)) }
    }

    /// Holds (`true`) or releases the Number Of Completed Packets of every connection to the
    /// central at `address` (a phone's `address`): a central that stops acknowledging, so its
    /// connection's transmit credits stop returning to the host.
    public func stall(_ address: String, _ stalled: Bool = true) {
        lifeline.fileHandleForWriting.write(Data("\(stalled ? "stall" : "resume") \(address)\n".utf8))
    }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    public func stop() {
        guard process.isRunning else { return }
        // SIGKILL: it may have inherited a blocked SIGTERM from the test process's threads.
        kill(process.processIdentifier, SIGKILL)
        // No waitUntilExit: it waits for Foundation's exit notice, which needs a thread of the
        // pool this may be blocking (two such waits deadlocked a full test run). Process reaps it.
    }

    deinit { stop() }
}
