import Foundation
import MQTTMirror
import TestHarness
import Testing

/// Numeric Comparison through the `gattway` executable: `io_capabilities: display_yes_no` with a
/// confirm button (`confirm_with`) on a simulated line pressed once a second. The number reaches
/// the log and `<base>/<dev>/pairing`, the button's press accepts it, and the phone (which showed
/// the same number and said yes) gets an authenticated, bonded link that may write.
@Suite(.serialized, .timeLimit(.minutes(2)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct NumericComparisonTests {
    static let config = """
        device: {name: confirm}
        bluetooth:
          security: {io_capabilities: display_yes_no, confirm_with: pair}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: BUTTON
                  generator:
                    type: steps
                    steps: [{level: 0, duration: 900ms}, {level: 1, duration: 100ms}]
        sensors:
          - {id: pair, kind: binary, line: BUTTON}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: 6E400007-B5A3-F393-E0A9-E50E24DC0001
                name: label
                format: utf8
                max_length: 8
                source: {written: "start"}
        """

    @Test func aPressOfTheConfirmButtonAcceptsTheNumberBothSidesShow() async throws {
        let rig = try await GatewayRig(config: Self.config, advertisedName: "confirm", broker: true)
        defer { rig.stop() }
        let watcher = try MQTTWatcher(port: try #require(rig.broker).port, filter: "gattway/confirm/#")
        let online = await watcher.first { $0.topic == "gattway/confirm/availability" && $0.text == "online" }
        try #require(online != nil, "gattway is online on MQTT:\n\(rig.log)")

        let (phone, _) = try await rig.connectedPhone()
        let services = try await phone.expect("discover")["services"] as? [[String: Any]] ?? []
        let label = try #require(
            services.flatMap { $0["characteristics"] as? [[String: Any]] ?? [] }
                .first { $0["uuid"] as? String == "6E400007-B5A3-F393-E0A9-E50E24DC0001" }?["value_handle"] as? Int)
        // A writable characteristic needs an encrypted, bonded link by default.
        #expect(try await phone.run("write", ["handle": label, "value": "6f6b"]).int("att_error") != nil)

        let paired = try await phone.expect("pair", ["io": "display_yes_no"])
        let number = try #require(paired.int("compared"), "the phone was asked to compare numbers")
        #expect(paired["authenticated"] as? Bool == true)
        let digits = String(format: "%06d", number)
        #expect(rig.waitForLog("if \(phone.address) shows \(digits), press \"pair\" to pair"), "\(rig.log)")
        let prompt = await watcher.first { $0.topic == "gattway/confirm/pairing" }
        let payload = try JSONSerialization.jsonObject(with: Data((prompt?.text ?? "{}").utf8)) as? [String: Any]
        #expect(payload?["central"] as? String == phone.address)
        #expect(payload?["compare"] as? String == digits)

        try await phone.expect("write", ["handle": label, "value": "6f6b"])
        #expect(try await phone.expect("read", ["handle": label]).string("value") == "6f6b")
        await watcher.stop()
    }
}
