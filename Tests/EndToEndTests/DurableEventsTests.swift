import Foundation
import Testing
import TestHarness

extension LoadSensitiveEndToEnd {
    /// Nothing a phone writes is lost on MQTT: 10,000 writes, with the broker stopped for the second
    /// half of them and gattway killed with SIGKILL once they are in its outbox, all reach a
    /// subscriber after gattway starts again and the broker comes back.
    @Suite(.serialized, .timeLimit(.minutes(8)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
    struct DurableEventsTests {
        static let config = """
            device: {name: durable}
            gpio: {backend: simulated}
            services:
              - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0005
                name: io
                characteristics:
                  - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0005
                    name: level
                    format: uint16
                    properties: [read, write, write_without_response]
                    source: {written: 0}
                    permissions: {write: open}
            """
        static let written = "gattway/durable/io/level/written"
        static let writes = 10_000

        @Test func tenThousandWritesSurviveABrokerOutageAndASIGKILL() async throws {
            // The subscriber's backlog while it reconnects may exceed mosquitto's default queue of
            // 1,000 messages per client, which would drop messages in the broker, not in gattway.
            let broker = try Broker(extra: "allow_anonymous true\nmax_queued_messages 0", persistent: true)
            defer { broker.stop() }
            let subscriber = try await PersistentSubscriber(port: broker.port, topic: Self.written)
            let rig = try await GatewayRig(
                config: Self.config, advertisedName: "durable",
                arguments: ["--log-level", "info", "--mqtt", "mqtt://127.0.0.1:\(broker.port)"])
            defer { rig.stop() }
            let (phone, _) = try await rig.connectedPhone()
            let handle = try await phone.valueHandle(of: "6E400002-B5A3-F393-E0A9-E50E24DC0005")
            func write(_ value: Int) async throws {
                let bytes = String(format: "%02x%02x", value & 0xFF, value >> 8)
                try await phone.expect("write", ["handle": handle, "value": bytes, "response": false])
            }
            for value in 1...(Self.writes / 2) { try await write(value) }
            broker.stop()
            for value in (Self.writes / 2 + 1)...Self.writes { try await write(value) }

            // The last write is in the outbox journal (each event is fsynced as it is appended, in
            // order): then SIGKILL, with the second half waiting there for the broker.
            let journal = rig.directory.appendingPathComponent("state/outbox.jsonl").path
            let last = #""value":\#(Self.writes),"#
            let deadline = ContinuousClock.now + .seconds(120)
            while !Self.journalHolds(last, journal), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(Self.journalHolds(last, journal), "the last write reached the outbox:\n\(rig.log.suffix(2000))")
            rig.kill()

            // gattway again, on the same state directory; then the broker comes back.
            let second = GattwayProcess([
                "run", "--config", rig.configPath, "--hci", rig.hci, "--log-level", "info",
                "--mqtt", "mqtt://127.0.0.1:\(broker.port)"
            ])
            try second.start()
            defer { second.stop() }
            try broker.start()
            let lines = try await subscriber.lines(on: Self.written, count: Self.writes, timeout: .seconds(240))
            let values = Set(
                lines.compactMap { line -> Int? in
                    guard let start = line.range(of: #""value":"#) else { return nil }
                    return Int(line[start.upperBound...].prefix { $0.isNumber })
                })
            #expect(values == Set(1...Self.writes), "missing: \(Set(1...Self.writes).subtracting(values).sorted().prefix(20))")
        }

        /// Whether an `add` record of the outbox journal carries a payload containing `text`.
        static func journalHolds(_ text: String, _ journal: String) -> Bool {
            guard let contents = try? String(contentsOfFile: journal, encoding: .utf8) else { return false }
            return contents.split(separator: "\n").contains { line in
                guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let encoded = record["payload"] as? String, let payload = Data(base64Encoded: encoded)
                else { return false }
                return String(decoding: payload, as: UTF8.self).contains(text)
            }
        }
    }
}
