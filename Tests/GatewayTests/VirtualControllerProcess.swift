import Foundation
import Testing

/// The harness's virtual controller (Tests/harness/virtual_controller.py) on a free port, for
/// tests of `gattway run` with a controller. Python comes from `GATTWAY_PYTHON`, else
/// `<package root>/.venv/bin/python3`; without it the test fails saying so.
final class VirtualControllerProcess: @unchecked Sendable {
    struct Unavailable: Error, CustomStringConvertible { let description: String }

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    private let process = Process()
    /// The controller exits when this pipe closes, so it never outlives the test process.
    private let lifeline = Pipe()
    let port: Int

    init() throws {
        let python = ProcessInfo.processInfo.environment["GATTWAY_PYTHON"] ?? Self.packageRoot + "/.venv/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Unavailable(description: "the virtual controller needs Python with Bumble at \(python) "
                              + "(deploy/dev/install-deps.sh creates it), or GATTWAY_PYTHON")
        }
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.packageRoot + "/Tests/harness/virtual_controller.py", "--tcp-port", "0",
                             "--exit-with-stdin"]
        process.standardInput = lifeline
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line is "READY tcp=<port> ..." once it listens.
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), let first = byte.first, first != 0x0A {
            line.append(first)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("READY "),
              let port = text.split(separator: " ").first(where: { $0.hasPrefix("tcp=") }).flatMap({ Int($0.dropFirst(4)) })
        else {
            process.terminate()
            throw Unavailable(description: "the virtual controller did not start: \(text)")
        }
        self.port = port
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit { stop() }
}

/// The unit-only Debian 13 stage (Tests/userland/debian13.sh sets GATTWAY_UNIT_ONLY) has neither
/// Bumble nor mosquitto; everywhere else a missing peer is a failure, never a skip.
let integrationTestsStandAside = ProcessInfo.processInfo.environment["GATTWAY_UNIT_ONLY"] != nil
let unitOnlyReason: Comment = "GATTWAY_UNIT_ONLY is set: tests with Bumble or mosquitto run in the main stage"
