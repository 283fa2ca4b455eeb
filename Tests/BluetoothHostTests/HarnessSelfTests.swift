import Foundation
import Testing
import TestHarness

/// The virtual controller's patches of Bumble's gaps, checked in raw HCI by
/// Tests/harness/selftest.py (Reset, scan responses, PHY, data length, LE Encrypt against the
/// Core sample, P-256 key, remote version, ACL fragmentation, credit enforcement, addresses).
@Suite(.timeLimit(.minutes(1)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct HarnessSelfTests {
    @Test func virtualControllerPatchesBumblesGaps() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Harness.python())
        process.arguments = [Harness.directory + "/selftest.py"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let reader = LineReader(output.fileHandleForReading)
        var lines: [String] = []
        while let line = await reader.next() { lines.append(line) }
        process.waitUntilExit()
        let failures = lines.filter { $0.hasPrefix("FAIL") }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(lines.filter { $0.hasPrefix("ok") }.count == 12, "\(lines.joined(separator: "\n"))")
        #expect(process.terminationStatus == 0)
    }
}
