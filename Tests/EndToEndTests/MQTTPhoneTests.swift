import Foundation
import MQTTMirror
import TestHarness
import Testing

extension LoadSensitiveEndToEnd {
    /// The MQTT mirror seen from a real phone: `gattway run` with a configuration, the virtual
    /// controller, a Bumble phone and a real mosquitto (`GatewayRig`). A phone's writes of every ATT
    /// kind reach `/written` (latency measured), `/set` reaches a subscribed phone, and its
    /// subscriptions and connection reach `/subscribers` and `centrals/<address>`, payloads exact.
    @Suite(.serialized, .timeLimit(.minutes(5)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
    struct MQTTPhoneTests {
        static let config = """
            device: {name: mqttphone}
            gpio: {backend: simulated}
            services:
              - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                name: io
                characteristics:
                  - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                    name: level
                    format: uint16
                    properties: [read, write, write_without_response, notify]
                    source: {written: 7}
                    permissions: {write: open}
            """
        static let device = "gattway/mqttphone"
        static let level = "gattway/mqttphone/io/level"

        /// gattway with a broker, a watcher on the device's topics, and a phone connected to it that
        /// discovered the `level` characteristic.
        struct Session {
            let rig: GatewayRig
            let watcher: MQTTWatcher
            let phone: Phone
            let valueHandle: Int
            let clientConfigurationHandle: Int

            static func start() async throws -> Session {
                let rig = try await GatewayRig(config: MQTTPhoneTests.config, advertisedName: "mqttphone", broker: true)
                let broker = try #require(rig.broker)
                let watcher = try MQTTWatcher(port: broker.port, filter: "\(MQTTPhoneTests.device)/#")
                // Retained, so it arrives whenever the watcher subscribed: from here on it hears everything.
                let online = await watcher.first { $0.topic == "\(MQTTPhoneTests.device)/availability" && $0.text == "online" }
                try #require(online != nil, "gattway is online on MQTT:\n\(rig.log)")
                let (phone, _) = try await rig.connectedPhone()
                let discovered = try await phone.expect("discover")
                let services = discovered["services"] as? [[String: Any]] ?? []
                let characteristic = try #require(
                    services.flatMap { $0["characteristics"] as? [[String: Any]] ?? [] }
                        .first { $0["uuid"] as? String == "6E400002-B5A3-F393-E0A9-E50E24DC0001" })
                let valueHandle = try #require(characteristic["value_handle"] as? Int)
                let descriptors = characteristic["descriptors"] as? [[String: Any]] ?? []
                let cccd = try #require(descriptors.first { $0["uuid"] as? String == "2902" }?["handle"] as? Int)
                return Session(
                    rig: rig, watcher: watcher, phone: phone, valueHandle: valueHandle,
                    clientConfigurationHandle: cccd)
            }

            func stop() async {
                await watcher.stop()
                rig.stop()
            }
        }

        /// Runs `body` on a fresh session and stops it afterwards, also when `body` throws.
        static func withSession(_ body: (Session) async throws -> Void) async throws {
            let session = try await Session.start()
            do {
                try await body(session)
            } catch {
                await session.stop()
                throw error
            }
            await session.stop()
        }

        // MARK: (a) writes

        /// Every ATT write kind reaches `/written` with value, central, kind and timestamp (QoS 1, not
        /// retained). Latency: from just before the test asks the phone to write (for a prepared
        /// write, before its Prepare Write Request) to the watcher receiving the message.
        @Test func phoneWritesOfEveryKindReachWrittenWithinFiftyMilliseconds() async throws {
            try await Self.withSession { session in
                let (phone, watcher) = (session.phone, session.watcher)
                let topic = "\(Self.level)/written"
                let writes = 50
                for (kind, first) in [("request", 1000), ("command", 2000), ("prepared", 3000)] {
                    var latencies: [Double] = []
                    for value in first..<(first + writes) {
                        let hex = String(format: "%02x%02x", value & 0xFF, value >> 8)
                        let mark = watcher.count
                        let sent = Date()
                        switch kind {
                        case "request": try await phone.expect("write", ["handle": session.valueHandle, "value": hex])
                        case "command":
                            try await phone.expect("write", ["handle": session.valueHandle, "value": hex, "response": false])
                        default:
                            try await phone.expect("prepare", ["handle": session.valueHandle, "offset": 0, "value": hex])
                            try await phone.expect("execute")
                        }
                        let arrival = try #require(
                            await watcher.first(after: mark) {
                                $0.topic == topic && $0.text?.hasPrefix(#"{"value":\#(value),"#) == true
                            }, "write \(value) (\(kind)) reached \(topic)\n\(session.rig.log)")
                        latencies.append(arrival.at.timeIntervalSince(sent))
                        let (payload, ts) = try Self.stamped(try #require(arrival.text), key: "ts")
                        #expect(payload == #"{"value":\#(value),"central":"\#(phone.address)","kind":"\#(kind)","ts":"TS"}"#)
                        #expect(ts >= sent.addingTimeInterval(-1) && ts <= arrival.at.addingTimeInterval(1), "ts is when it was written")
                        #expect(arrival.message.retain == false)
                        #expect(arrival.message.qos == .atLeastOnce)
                    }
                    let sorted = latencies.sorted()
                    let median = (sorted[writes / 2 - 1] + sorted[writes / 2]) / 2
                    let p95 = sorted[Int((Double(writes) * 0.95).rounded(.up)) - 1]
                    print(
                        "phone write (\(kind)) → MQTT /written over \(writes) writes: "
                            + String(format: "median %.1f ms, p95 %.1f ms, max %.1f ms", median * 1000, p95 * 1000, sorted.last! * 1000))
                    #expect(median < 0.050, "median latency of \(kind) writes is \(median * 1000) ms")
                }
                let reads = try await phone.expect("read", ["handle": session.valueHandle])
                #expect(reads.string("value") == String(format: "%02x%02x", 3049 & 0xFF, 3049 >> 8), "the last write is the value")
            }
        }

        // MARK: (b) /set

        /// A valid `/set` reaches the subscribed phone as a notification and becomes the value; an
        /// invalid one changes nothing and is reported on `<base>/<dev>/error`.
        @Test func setReachesASubscribedPhoneAndABadSetChangesNothing() async throws {
            try await Self.withSession { session in
                let (phone, watcher) = (session.phone, session.watcher)
                try await phone.expect("subscribe", ["handle": session.valueHandle])
                let subscribed = await watcher.first { $0.topic == "\(Self.level)/subscribers" && $0.text?.contains(phone.address) == true }
                try #require(subscribed != nil, "gattway saw the subscription")

                try watcher.publish("\(Self.level)/set", "4242")
                let notified = try await phone.expect("notifications", ["count": 1, "timeout": 5])
                let values = notified["values"] as? [[String: Any]] ?? []
                #expect(values.count == 1)
                #expect(values.first?["handle"] as? Int == session.valueHandle)
                #expect(values.first?["value"] as? String == "9210", "4242 as little-endian uint16")
                let value = try #require(await watcher.first { $0.topic == Self.level && $0.text?.hasPrefix(#"{"value":4242,"#) == true })
                #expect(try Self.stamped(try #require(value.text), key: "ts").payload == #"{"value":4242,"ts":"TS"}"#)

                for (payload, reason) in [
                    ("70000", "out of range: 70000 does not fit uint16 (0...65535)"),
                    (#""high""#, "wrong type: a uint16 characteristic needs")
                ] {
                    let mark = watcher.count
                    try watcher.publish("\(Self.level)/set", payload)
                    let error = try #require(
                        await watcher.first(after: mark) { $0.topic == "\(Self.device)/error" },
                        "\(payload) is reported on the error topic")
                    let (text, _) = try Self.stamped(try #require(error.text), key: "ts")
                    #expect(text.hasPrefix(#"{"topic":"\#(Self.level)/set","reason":"\#(reason)"#), "\(text)")
                    #expect(text.hasSuffix(#"","ts":"TS"}"#))
                    #expect(!watcher.messages.dropFirst(mark).contains { $0.topic == Self.level }, "no new value for \(payload)")
                    let quiet = try await phone.expect("notifications", ["count": 1, "timeout": 1])
                    #expect((quiet["values"] as? [Any])?.isEmpty == true, "no notification for \(payload)")
                    let read = try await phone.expect("read", ["handle": session.valueHandle])
                    #expect(read.string("value") == "9210", "the value is unchanged after \(payload)")
                }
            }
        }

        // MARK: (c) subscribers

        /// Subscribe, unsubscribe (CCCD written to 0) and disconnect each re-publish the retained
        /// subscriber list.
        @Test func subscribeUnsubscribeAndDisconnectReachSubscribers() async throws {
            try await Self.withSession { session in
                let (phone, watcher) = (session.phone, session.watcher)
                let topic = "\(Self.level)/subscribers"
                let subscribedPayload = #"{"centrals":[{"address":"\#(phone.address)","kind":"notify"}]}"#
                let emptyPayload = #"{"centrals":[]}"#

                func expectNext(_ payload: String, after mark: Int, _ what: String) async {
                    let message = await watcher.first(after: mark) { $0.topic == topic && $0.text == payload }
                    #expect(message != nil, "\(what) re-publishes \(topic) as \(payload)")
                    #expect(message?.message.qos == .atLeastOnce)
                }
                var mark = watcher.count
                try await phone.expect("subscribe", ["handle": session.valueHandle])
                await expectNext(subscribedPayload, after: mark, "subscribe")
                mark = watcher.count
                try await phone.expect("write", ["handle": session.clientConfigurationHandle, "value": "0000"])
                await expectNext(emptyPayload, after: mark, "unsubscribe")
                mark = watcher.count
                try await phone.expect("subscribe", ["handle": session.valueHandle])
                await expectNext(subscribedPayload, after: mark, "subscribe again")

                // Retained: a client arriving now gets the list at once.
                let late = try MQTTWatcher(port: try #require(session.rig.broker).port, filter: topic)
                let retained = await late.first { $0.topic == topic }
                #expect(retained?.text == subscribedPayload)
                #expect(retained?.message.retain == true)
                await late.stop()

                mark = watcher.count
                try await phone.expect("disconnect")
                await expectNext(emptyPayload, after: mark, "disconnect")
                let afterDisconnect = try MQTTWatcher(port: try #require(session.rig.broker).port, filter: topic)
                let retainedEmpty = await afterDisconnect.first { $0.topic == topic }
                #expect(retainedEmpty?.text == emptyPayload)
                #expect(retainedEmpty?.message.retain == true)
                await afterDisconnect.stop()
            }
        }

        // MARK: (d) centrals

        /// `centrals/<address>` appears on connect (MTU, security, since), follows an MTU exchange
        /// with the same `since`, and is cleared by an empty retained message on disconnect.
        @Test func centralsTopicFollowsTheConnection() async throws {
            try await Self.withSession { session in
                let (phone, watcher) = (session.phone, session.watcher)
                let topic = "\(Self.device)/centrals/\(phone.address)"
                let connected = try #require(await watcher.first { $0.topic == topic }, "centrals/<address> on connect")
                let (payload, since) = try Self.stamped(try #require(connected.text), key: "since")
                #expect(payload == #"{"address":"\#(phone.address)","mtu":23,"security":"none","bonded":false,"since":"TS"}"#)
                #expect(abs(since.timeIntervalSinceNow) < 60)
                #expect(connected.message.qos == .atLeastOnce)
                let state = await watcher.first { $0.topic == "\(Self.device)/state" && $0.text?.contains(phone.address) == true }
                #expect(state?.text?.contains(#""centrals":["\#(phone.address)"]"#) == true)

                var mark = watcher.count
                let exchanged = try await phone.expect("mtu", ["mtu": 185])
                #expect(exchanged.int("mtu") == 185)
                let updated = try #require(await watcher.first(after: mark) { $0.topic == topic }, "the MTU exchange re-publishes")
                let (updatedPayload, updatedSince) = try Self.stamped(try #require(updated.text), key: "since")
                #expect(updatedPayload == #"{"address":"\#(phone.address)","mtu":185,"security":"none","bonded":false,"since":"TS"}"#)
                #expect(updatedSince == since, "still connected since the connection")

                let late = try MQTTWatcher(port: try #require(session.rig.broker).port, filter: topic)
                let retained = await late.first { $0.topic == topic }
                #expect(retained?.message.retain == true)
                #expect(retained?.text == updated.text)
                await late.stop()

                mark = watcher.count
                try await phone.expect("disconnect")
                let cleared = try #require(await watcher.first(after: mark) { $0.topic == topic }, "cleared on disconnect")
                #expect(cleared.message.payload.isEmpty)
                // An empty retained message deletes the retained one: a client arriving now gets nothing
                // for the central, while it does get the (retained) availability.
                let afterDisconnect = try MQTTWatcher(port: try #require(session.rig.broker).port, filter: "\(Self.device)/#")
                #expect(await afterDisconnect.first { $0.topic == "\(Self.device)/availability" } != nil)
                #expect(await afterDisconnect.first(timeout: .seconds(1)) { $0.topic == topic } == nil)
                await afterDisconnect.stop()
            }
        }

        // MARK: Helpers

        /// `text` with the value of the string field `key` (an ISO 8601 UTC time with milliseconds)
        /// replaced by `TS`, and that time.
        static func stamped(_ text: String, key: String) throws -> (payload: String, time: Date) {
            let pattern = try Regex(#""\#(key)":"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z)""#)
            let match = try #require(text.firstMatch(of: pattern), "\(key) is an ISO 8601 time with milliseconds in \(text)")
            let stamp = try #require(match.output[1].substring.map(String.init))
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let time = try #require(formatter.date(from: stamp))
            return (text.replacingCharacters(in: match.range, with: #""\#(key)":"TS""#), time)
        }
    }
}
