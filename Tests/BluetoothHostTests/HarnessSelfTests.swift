import Foundation
import TestHarness
import Testing

/// The virtual controller's patches of Bumble's gaps, checked in raw HCI by
/// Tests/harness/selftest.py (Reset, scan responses, PHY, data length, LE Encrypt against the
/// Core sample, P-256 key, remote version, ACL fragmentation, credit enforcement, addresses).
@Suite(.timeLimit(.minutes(1)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct HarnessSelfTests {
    @Test func virtualControllerPatchesBumblesGaps() async throws {
        let selftest = try await ChildProcess([try Harness.python(), Harness.directory + "/selftest.py"])
            .runToCompletion(timeout: 60)
        let lines = (selftest.stdout.split(separator: "\n") + selftest.stderr.split(separator: "\n")).map(String.init)
        let failures = lines.filter { $0.hasPrefix("FAIL") }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(lines.filter { $0.hasPrefix("ok") }.count == 12, "\(lines.joined(separator: "\n"))")
        #expect(selftest.status == 0)
    }
}
