import Foundation
import TestHarness
import Testing

/// `bluetooth.connection` is a wish gattway acts on: a central whose connection does not meet it
/// is asked (an L2CAP Connection Parameter Update Request), and a Bumble phone that accepts ends
/// up on the configured latency and supervision timeout, with an interval in the range.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct ConnectionParametersTests {
    @Test func aCentralIsAskedForTheConfiguredParameters() async throws {
        let rig = try await GatewayRig(
            config: """
                device: {name: connparams}
                bluetooth:
                  connection: {min_interval: 100ms, max_interval: 150ms, latency: 2, supervision_timeout: 6s}
                gpio: {backend: simulated}
                """, advertisedName: "connparams")
        defer { rig.stop() }
        let mark = rig.logMark
        _ = try await rig.connectedPhone()
        #expect(
            rig.waitForLog(
                "for the configured connection parameters: interval 100.0–150.0 ms, latency 2, timeout 6000 ms",
                since: mark, timeout: 20), "\(rig.log(since: mark))")
        #expect(
            rig.waitForLog("): interval ", since: mark, timeout: 20),
            "the controller reports the updated connection:\n\(rig.log(since: mark))")
        // The host's line for the LE Connection Update Complete: "<central>: interval N ms, latency 2, …".
        let update = rig.log(since: mark).split(separator: "\n")
            .first { $0.contains("): interval ") && $0.hasSuffix("ms, latency 2, timeout 6000 ms") }
        let words = update.map { $0.split(separator: " ").map(String.init) } ?? []
        let interval = words.firstIndex(of: "interval").flatMap { Double(words[$0 + 1]) }
        #expect(interval.map { (100...150).contains($0) } == true, "interval within the range: \(update.map(String.init) ?? "none")")
    }

    /// Without a `bluetooth.connection` section the parameters are only published (PPCP):
    /// nobody is asked.
    @Test func withoutTheSectionNobodyIsAsked() async throws {
        let rig = try await GatewayRig(
            config: "device: {name: connquiet}\ngpio: {backend: simulated}",
            advertisedName: "connquiet")
        defer { rig.stop() }
        let mark = rig.logMark
        _ = try await rig.connectedPhone()
        #expect(rig.waitForLog(" connected (1 connected)", since: mark, timeout: 10))
        try await Task.sleep(for: .seconds(1))
        #expect(!rig.log(since: mark).contains("for the configured connection parameters"))
    }
}
