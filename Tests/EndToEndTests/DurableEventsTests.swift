import Foundation
import TestHarness
import Testing

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

        static let levelUUID = "6E400002-B5A3-F393-E0A9-E50E24DC0005"

        /// Writes `value` as the characteristic's uint16, with a response: once it returns, gattway took it.
        static func write(_ value: Int, handle: Int, phone: Phone) async throws {
            let bytes = String(format: "%02x%02x", value & 0xFF, value >> 8)
            try await phone.expect("write", ["handle": handle, "value": bytes, "response": true])
        }

        /// The `value`s of the `/written` messages `watcher` has seen.
        static func writtenValues(_ watcher: MQTTWatcher, topic: String) -> Set<Int> {
            Set(
                watcher.messages.filter { $0.topic == topic }.compactMap { arrival -> Int? in
                    guard let text = arrival.text, let start = text.range(of: #""value":"#) else { return nil }
                    return Int(text[start.upperBound...].prefix { $0.isNumber })
                })
        }

        /// A phone's writes while the mirror is off (it could not start: its discovery record
        /// unreadable) wait in the outbox, which `gattway status` counts, and reach the broker once
        /// a reload starts the mirror.
        @Test func writesWhileTheMirrorIsOffAreDeliveredWhenItStarts() async throws {
            let rig = try await GatewayRig(config: Self.config, advertisedName: "durable", broker: true)
            defer { rig.stop() }
            let broker = try #require(rig.broker)
            let record = try ReloadEndToEndTests.blockDiscoveryRecord(rig)
            try rig.restartGattway()
            #expect(rig.waitForLog("the MQTT mirror did not start: "), "\(rig.log)")

            let (phone, _) = try await rig.connectedPhone()
            let handle = try await phone.valueHandle(of: Self.levelUUID)
            for value in 1...20 { try await Self.write(value, handle: handle, phone: phone) }
            let off = try await ReloadEndToEndTests.gattway(["status", "--config", rig.configPath])
            let offLine = off.stdout.split(separator: "\n").last.map(String.init) ?? ""
            #expect(offLine.hasPrefix("mqtt mqtt://127.0.0.1:\(broker.port): off ("), "\(off)")
            #expect(offLine.contains(" waiting") && !offLine.contains("outbox 0 waiting"), "the writes wait: \(off)")

            try FileManager.default.removeItem(atPath: record)
            let watcher = try MQTTWatcher(port: broker.port, filter: Self.written)
            defer { Task { await watcher.stop() } }
            let reload = try await ReloadEndToEndTests.gattway(["reload", "--config", rig.configPath])
            #expect(reload.stdout == "configuration reloaded\n  applied: mqtt: the mirror started\n", "\(reload)")
            let deadline = ContinuousClock.now + .seconds(20)
            while Self.writtenValues(watcher, topic: Self.written).count < 20, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(Self.writtenValues(watcher, topic: Self.written) == Set(1...20), "\(rig.log.suffix(3000))")
        }

        /// An event the broker refuses (MQTT 5: the broker's ACL denies its topic) is not dropped
        /// unseen: it is published whole on `error`, and counted on `state` and by `gattway status`.
        @Test func anEventTheBrokerRefusesIsPublishedOnErrorAndCounted() async throws {
            let directory = try temporaryDirectory("acl")
            let acl = directory.appendingPathComponent("acl").path
            try """
            topic read #
            topic write gattway/refusing/+
            topic write gattway/refusing/io/level
            topic write gattway/refusing/io/level/subscribers
            topic write gattway/refusing/centrals/#
            topic write homeassistant/#

            """.write(toFile: acl, atomically: true, encoding: .utf8)
            let broker = try Broker(extra: "allow_anonymous true\nacl_file \(acl)")
            defer { broker.stop() }
            let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/refusing/#")
            defer { Task { await watcher.stop() } }
            let rig = try await GatewayRig(
                config: Self.config.replacingOccurrences(of: "{name: durable}", with: "{name: refusing}"),
                advertisedName: "refusing",
                arguments: ["--log-level", "info", "--mqtt", "mqtt://127.0.0.1:\(broker.port)"])
            defer { rig.stop() }
            let online = await watcher.first { $0.topic == "gattway/refusing/availability" && $0.text == "online" }
            try #require(online != nil, "online on MQTT:\n\(rig.log)")

            let (phone, _) = try await rig.connectedPhone()
            let handle = try await phone.valueHandle(of: Self.levelUUID)
            try await Self.write(7, handle: handle, phone: phone)
            let error = await watcher.first { $0.topic == "gattway/refusing/error" }
            let text = error?.text ?? "none"
            #expect(text.contains(#""topic":"gattway/refusing/io/level/written""#), "\(text)")
            #expect(text.contains(#"\"value\":7"#), "the event itself: \(text)")
            #expect(text.contains("Not authorized"), "why: \(text)")
            let state = await watcher.first { $0.topic == "gattway/refusing/state" && $0.text?.contains(#""refused":1"#) == true }
            #expect(state != nil, "the state topic counts it")
            let status = try await ReloadEndToEndTests.gattway(["status", "--config", rig.configPath])
            #expect(status.stdout.contains("; outbox 0 waiting, 1 refused by the broker (on error)"), "\(status)")
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
