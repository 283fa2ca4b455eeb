import Foundation
import LoopClock
import Testing

@testable import MQTTMirror

let t0 = Date(timeIntervalSince1970: 1_800_000_000.25)  // 2027-01-15T08:00:00.250Z
let t1 = Date(timeIntervalSince1970: 1_800_000_100)  // 2027-01-15T08:01:40.000Z
/// The loop's clock when `t0` was the wall clock's (heartbeats count on the loop's).
let loopStart = LoopInstant(nanoseconds: 1_000_000_000)

let temperature = MirrorCharacteristicID(service: "env", characteristic: "temperature")
let relay = MirrorCharacteristicID(service: "io", characteristic: "relay")
let remote = MirrorCharacteristicID(service: "env", characteristic: "outside")
let blob = MirrorCharacteristicID(service: "io", characteristic: "blob")
let phone = "AA:BB:CC:DD:EE:01"
let tablet = "AA:BB:CC:DD:EE:02"

func sampleConfiguration(discovery: String? = "homeassistant") -> MirrorConfiguration {
    MirrorConfiguration(
        deviceID: "pi1", deviceName: "Garden Pi",
        characteristics: [
            MirrorCharacteristic(
                id: temperature,
                homeAssistant: HomeAssistantEntity(
                    domain: .sensor, name: "Temperature", deviceClass: "temperature", unit: "°C",
                    stateClass: "measurement", displayPrecision: 2)),
            MirrorCharacteristic(
                id: relay, acceptsSet: true,
                homeAssistant: HomeAssistantEntity(
                    domain: .switch, name: "Relay", deviceClass: "outlet")),
            MirrorCharacteristic(id: remote, sourceTopic: "weather/outside"),
            MirrorCharacteristic(id: blob, payloadStyle: .raw)
        ], discoveryPrefix: discovery, softwareVersion: "1.2.3")
}

func published(_ actions: [MirrorAction]) -> [String] {
    actions.map {
        switch $0 {
        case .publish(let message, let durable):
            "\(durable ? "durable " : "")\(message.retain ? "retained " : "")\(message.topic) \(message.string)"
        case .subscribe(let topic): "subscribe \(topic)"
        case .unsubscribe(let topic): "unsubscribe \(topic)"
        }
    }
}

@Suite("Mirror topic model")
struct MirrorTests {
    @Test func valueTopicCarriesJSONValueAndTimestamp() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(
            published(mirror.apply(.valueChanged(temperature, value: MirrorValue(json: "21.5"), raw: [0x66, 0x08], at: t0), now: loopStart))
                == [
                    #"retained gattway/pi1/env/temperature {"value":21.5,"ts":"2027-01-15T08:00:00.250Z"}"#
                ])
        #expect(
            published(mirror.apply(.valueChanged(relay, value: MirrorValue(json: "true"), raw: [1], at: t1), now: loopStart)) == [
                #"retained gattway/pi1/io/relay {"value":true,"ts":"2027-01-15T08:01:40.000Z"}"#
            ])
    }

    @Test func rawStylePublishesTheBytes() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        let actions = mirror.apply(.valueChanged(blob, value: MirrorValue(json: #""dead""#), raw: [0xde, 0xad], at: t0), now: loopStart)
        #expect(actions == [.publish(MQTTMessage(topic: "gattway/pi1/io/blob", payload: [0xde, 0xad], retain: true), durable: false)])
    }

    @Test func valueQoSAndRetainFollowTheConfiguration() throws {
        var configuration = sampleConfiguration(discovery: nil)
        configuration.valueQoS = .atMostOnce
        configuration.retainValues = false
        var mirror = try Mirror(configuration: configuration)
        let actions = mirror.apply(.valueChanged(temperature, value: MirrorValue(json: "7"), raw: [7], at: t0), now: loopStart)
        #expect(
            actions == [
                .publish(
                    MQTTMessage(
                        topic: "gattway/pi1/env/temperature",
                        text: #"{"value":7,"ts":"2027-01-15T08:00:00.250Z"}"#,
                        qos: .atMostOnce, retain: false), durable: false)
            ])
        // A value that is not retained is not re-sent as if it were news after a reconnection.
        #expect(!mirror.retainedSnapshot.map(\.topic).contains("gattway/pi1/env/temperature"))
    }

    /// A value topic with a heartbeat is published again, unchanged, when nothing was published
    /// on it for a heartbeat; a value topic without one never is.
    @Test func heartbeatsPublishTheLastValueAgain() throws {
        var configuration = sampleConfiguration(discovery: nil)
        configuration.characteristics[0].heartbeat = .seconds(60)  // env/temperature
        configuration.characteristics[3].heartbeat = .milliseconds(1500)  // io/blob, raw
        var mirror = try Mirror(configuration: configuration)
        #expect(mirror.heartbeats(at: loopStart + .seconds(3600)).isEmpty, "no value yet, so none to repeat")
        #expect(
            mirror.nextHeartbeatCheck(after: loopStart) == loopStart + .seconds(1.5),
            "a first value is due no sooner than the shortest heartbeat")

        _ = mirror.apply(.valueChanged(temperature, value: MirrorValue(json: "21.5"), raw: [0x66, 0x08], at: t0), now: loopStart)
        _ = mirror.apply(.valueChanged(relay, value: MirrorValue(json: "true"), raw: [1], at: t0), now: loopStart)
        _ = mirror.apply(.valueChanged(blob, value: MirrorValue(json: #""dead""#), raw: [0xde, 0xad], at: t0), now: loopStart)
        #expect(mirror.nextHeartbeatCheck(after: loopStart + .seconds(1)) == loopStart + .seconds(1.5), "the blob's heartbeat is due first")
        #expect(mirror.heartbeats(at: loopStart + .seconds(1.4)).isEmpty)
        #expect(
            mirror.heartbeats(at: loopStart + .seconds(1.5)) == [
                .publish(MQTTMessage(topic: "gattway/pi1/io/blob", payload: [0xde, 0xad], retain: true), durable: false)
            ])
        #expect(mirror.nextHeartbeatCheck(after: loopStart + .seconds(1.5)) == loopStart + .seconds(3), "counted from the heartbeat")

        var heartbeats: [String] = []
        for second in stride(from: 1.0, through: 130, by: 1) {
            heartbeats += published(mirror.heartbeats(at: loopStart + .seconds(second)))
        }
        #expect(
            heartbeats.filter { $0.contains("env/temperature") }
                == Array(
                    repeating: #"retained gattway/pi1/env/temperature {"value":21.5,"ts":"2027-01-15T08:00:00.250Z"}"#, count: 2),
            "at 60 s and 120 s, the payload as it was")
        #expect(!heartbeats.contains { $0.contains("io/relay") }, "the relay has no heartbeat")
        // A new value restarts the count.
        _ = mirror.apply(
            .valueChanged(temperature, value: MirrorValue(json: "22"), raw: [0x98, 0x08], at: t0 + 150), now: loopStart + .seconds(150))
        #expect(!published(mirror.heartbeats(at: loopStart + .seconds(180))).contains { $0.contains("env/temperature") })
        #expect(published(mirror.heartbeats(at: loopStart + .seconds(210))).contains { $0.contains(#"env/temperature {"value":22,"#) })
    }

    @Test func writesAreDurableEventsNotRetained() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(
            published(
                mirror.apply(.written(relay, value: MirrorValue(json: "false"), central: phone, kind: .request, at: t0), now: loopStart))
                == [
                    #"durable gattway/pi1/io/relay/written {"value":false,"central":"AA:BB:CC:DD:EE:01","kind":"request","ts":"2027-01-15T08:00:00.250Z"}"#
                ])
        #expect(
            published(
                mirror.apply(.written(blob, value: MirrorValue(json: #""0aff""#), central: tablet, kind: .command, at: t1), now: loopStart))
                == [
                    #"durable gattway/pi1/io/blob/written {"value":"0aff","central":"AA:BB:CC:DD:EE:02","kind":"command","ts":"2027-01-15T08:01:40.000Z"}"#
                ])
    }

    /// The writer was answered before the line was driven: a failure reaches the error topic,
    /// durably, naming the output, the central and the reason.
    @Test func anOutputThatFailedIsReportedOnTheErrorTopic() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(
            published(
                mirror.apply(.outputFailed(relay, central: phone, reason: "driving output relay failed: EBUSY", at: t1), now: loopStart))
                == [
                    #"durable gattway/pi1/error {"topic":"gattway/pi1/io/relay","central":"AA:BB:CC:DD:EE:01","reason":"driving output relay failed: EBUSY","ts":"2027-01-15T08:01:40.000Z"}"#
                ])
    }

    @Test func pairingPromptsArePublishedUnretained() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(
            published(mirror.apply(.pairing(central: phone, prompt: .passkey("004217"), at: t0), now: loopStart)) == [
                #"gattway/pi1/pairing {"central":"AA:BB:CC:DD:EE:01","passkey":"004217","ts":"2027-01-15T08:00:00.250Z"}"#
            ])
        #expect(
            published(mirror.apply(.pairing(central: phone, prompt: .compare("093811"), at: t1), now: loopStart)) == [
                #"gattway/pi1/pairing {"central":"AA:BB:CC:DD:EE:01","compare":"093811","ts":"2027-01-15T08:01:40.000Z"}"#
            ])
    }

    @Test func centralsStateAndSubscribersFollowConnections() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(
            published(
                mirror.apply(
                    .peripheralState(
                        MirrorPeripheralState(
                            state: "poweredOn", advertising: true, counters: ["writes": 2, "reads": 5])), now: loopStart)) == [
                    #"retained gattway/pi1/state {"state":"poweredOn","advertising":true,"centrals":[],"uptime":0,"outbox":0,"refused":0,"counters":{"reads":5,"writes":2},"pairing":false,"unavailable":{}}"#
                ])
        #expect(
            published(mirror.apply(.centralConnected(MirrorCentral(address: phone, mtu: 23, security: .none, since: t0)), now: loopStart))
                == [
                    #"durable retained gattway/pi1/centrals/AA:BB:CC:DD:EE:01 {"address":"AA:BB:CC:DD:EE:01","mtu":23,"security":"none","bonded":false,"since":"2027-01-15T08:00:00.250Z"}"#,
                    #"retained gattway/pi1/state {"state":"poweredOn","advertising":true,"centrals":["AA:BB:CC:DD:EE:01"],"uptime":0,"outbox":0,"refused":0,"counters":{"reads":5,"writes":2},"pairing":false,"unavailable":{}}"#
                ])
        // An MTU/security update republishes the central only.
        #expect(
            published(
                mirror.apply(.centralConnected(MirrorCentral(address: phone, mtu: 247, security: .encrypted, since: t0)), now: loopStart))
                == [
                    #"durable retained gattway/pi1/centrals/AA:BB:CC:DD:EE:01 {"address":"AA:BB:CC:DD:EE:01","mtu":247,"security":"encrypted","bonded":false,"since":"2027-01-15T08:00:00.250Z"}"#
                ])
        #expect(
            published(mirror.apply(.subscribed(temperature, central: phone, kind: .notify), now: loopStart)) == [
                #"durable retained gattway/pi1/env/temperature/subscribers {"centrals":[{"address":"AA:BB:CC:DD:EE:01","kind":"notify"}]}"#
            ])
        _ = mirror.apply(.subscribed(temperature, central: tablet, kind: .indicate), now: loopStart)
        #expect(
            published(mirror.apply(.unsubscribed(temperature, central: tablet), now: loopStart)) == [
                #"durable retained gattway/pi1/env/temperature/subscribers {"centrals":[{"address":"AA:BB:CC:DD:EE:01","kind":"notify"}]}"#
            ])
        #expect(
            published(mirror.apply(.centralDisconnected(address: phone), now: loopStart)) == [
                #"durable retained gattway/pi1/env/temperature/subscribers {"centrals":[]}"#,
                "durable retained gattway/pi1/centrals/AA:BB:CC:DD:EE:01 ",
                #"retained gattway/pi1/state {"state":"poweredOn","advertising":true,"centrals":[],"uptime":0,"outbox":0,"refused":0,"counters":{"reads":5,"writes":2},"pairing":false,"unavailable":{}}"#
            ])
    }

    @Test func anMTUChangeRepublishesTheCentralWithEverythingElseKept() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(mirror.apply(.centralMTUChanged(address: phone, mtu: 185), now: loopStart).isEmpty, "nothing for an unknown central")
        _ = mirror.apply(.centralConnected(MirrorCentral(address: phone, mtu: 23, security: .encrypted, since: t0)), now: loopStart)
        // What a mirror that saw the central connect with MTU 185 in the first place publishes.
        var reference = try Mirror(configuration: sampleConfiguration())
        let connectedWith185 = reference.apply(
            .centralConnected(MirrorCentral(address: phone, mtu: 185, security: .encrypted, since: t0)), now: loopStart)
        #expect(published(mirror.apply(.centralMTUChanged(address: phone, mtu: 185), now: loopStart)) == [published(connectedWith185)[0]])
        #expect(published(connectedWith185)[0].contains(#""mtu":185,"security":"encrypted""#))
        _ = mirror.apply(.centralDisconnected(address: phone), now: loopStart)
        #expect(mirror.apply(.centralMTUChanged(address: phone, mtu: 247), now: loopStart).isEmpty, "nothing after it disconnected")
    }

    @Test func aSecurityChangeRepublishesTheCentralKeepingItsMTUAndSince() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        #expect(
            mirror.apply(.centralSecurityChanged(address: phone, security: .encrypted, bonded: true), now: loopStart).isEmpty,
            "nothing for an unknown central")
        _ = mirror.apply(.centralConnected(MirrorCentral(address: phone, mtu: 23, security: .none, since: t0)), now: loopStart)
        _ = mirror.apply(.centralMTUChanged(address: phone, mtu: 185), now: loopStart)
        #expect(
            published(mirror.apply(.centralSecurityChanged(address: phone, security: .authenticated, bonded: true), now: loopStart))
                == [
                    #"durable retained gattway/pi1/centrals/AA:BB:CC:DD:EE:01 {"address":"AA:BB:CC:DD:EE:01","mtu":185,"security":"authenticated","bonded":true,"since":"2027-01-15T08:00:00.250Z"}"#
                ])
        _ = mirror.apply(.centralDisconnected(address: phone), now: loopStart)
        #expect(
            mirror.apply(.centralSecurityChanged(address: phone, security: .none, bonded: false), now: loopStart).isEmpty,
            "nothing after it disconnected")
    }

    @Test func sourceTopicIsSubscribedOnlyWhileACentralIsSubscribed() throws {
        var mirror = try Mirror(configuration: sampleConfiguration(discovery: nil))
        let sourceMessage = MQTTMessage(topic: "weather/outside", text: "3.5")
        #expect(mirror.route(sourceMessage) == .ignored)
        #expect(
            published(mirror.apply(.subscribed(remote, central: phone, kind: .notify), now: loopStart)).last == "subscribe weather/outside")
        #expect(
            mirror.inboundSubscriptions == [
                "gattway/pi1/io/relay/set", "weather/outside", "gattway/pi1/centrals/+", "gattway/pi1/+/+/subscribers"
            ])
        #expect(mirror.route(sourceMessage) == .sourceValue([remote], payload: Array("3.5".utf8)))
        // A second central changes nothing; the last one leaving unsubscribes.
        #expect(
            !published(mirror.apply(.subscribed(remote, central: tablet, kind: .notify), now: loopStart)).contains {
                $0.hasPrefix("subscribe")
            })
        #expect(!published(mirror.apply(.unsubscribed(remote, central: phone), now: loopStart)).contains { $0.hasPrefix("unsubscribe") })
        #expect(published(mirror.apply(.centralDisconnected(address: tablet), now: loopStart)).last == "unsubscribe weather/outside")
        #expect(mirror.route(sourceMessage) == .ignored)
        #expect(mirror.inboundSubscriptions == ["gattway/pi1/io/relay/set", "gattway/pi1/centrals/+", "gattway/pi1/+/+/subscribers"])
    }

    @Test func onlyExactSetTopicsAreAccepted() throws {
        let mirror = try Mirror(configuration: sampleConfiguration())
        #expect(mirror.route(MQTTMessage(topic: "gattway/pi1/io/relay/set", text: "true")) == .set(relay, payload: Array("true".utf8)))
        for topic in [
            "gattway/pi1/env/temperature/set", "gattway/pi1/io/relay", "gattway/pi1/io/relay/set/x",
            "gattway/pi2/io/relay/set", "gattway/pi1/io/relay/written"
        ] {
            #expect(mirror.route(MQTTMessage(topic: topic, text: "true")) == .ignored, "\(topic)")
        }
        #expect(mirror.route(MQTTMessage(topic: "homeassistant/status", text: "online")) == .homeAssistantOnline)
        #expect(mirror.route(MQTTMessage(topic: "homeassistant/status", text: "offline")) == .ignored)
        #expect(
            mirror.inboundSubscriptions == [
                "gattway/pi1/io/relay/set", "homeassistant/status", "homeassistant/+/gattway_pi1/+/config", "gattway/pi1/centrals/+",
                "gattway/pi1/+/+/subscribers"
            ])
    }

    @Test func rejectionNamesTopicAndReason() throws {
        let mirror = try Mirror(configuration: sampleConfiguration())
        let message = mirror.rejection(of: relay, reason: "expected a boolean", at: t0)
        #expect(message.topic == "gattway/pi1/error")
        #expect(!message.retain && message.qos == .atLeastOnce)
        #expect(message.string == #"{"topic":"gattway/pi1/io/relay/set","reason":"expected a boolean","ts":"2027-01-15T08:00:00.250Z"}"#)
    }

    /// A sensor's value that is no longer current (its sensor stopped answering): its retained
    /// availability topic says `offline` (Home Assistant's entity needs it and the gateway's
    /// online, `availability_mode: all`), the heartbeat stops republishing the old value, and
    /// `state` names the sensor and why; the next value's availability brings all of it back.
    @Test func anUnavailableSensorValueIsOfflineAndGetsNoHeartbeat() throws {
        var configuration = sampleConfiguration()
        configuration.characteristics[0].heartbeat = .seconds(60)  // env/temperature
        configuration.characteristics[0].reportsAvailability = true
        var mirror = try Mirror(configuration: configuration)
        let document = mirror.discoveryMessages[0].string
        #expect(
            document.contains(
                #""suggested_display_precision":2,"expire_after":180,"availability":[{"topic":"gattway/pi1/availability","payload_available":"online","payload_not_available":"offline"},{"topic":"gattway/pi1/env/temperature/availability","payload_available":"online","payload_not_available":"offline"}],"availability_mode":"all"},"#
            ), "\(document)")
        #expect(mirror.retainedSnapshot.map(\.topic).contains("gattway/pi1/env/temperature/availability"))
        #expect(mirror.retainedSnapshot.first { $0.topic == "gattway/pi1/env/temperature/availability" }?.string == "online")
        #expect(!mirror.retainedSnapshot.map(\.topic).contains("gattway/pi1/io/relay/availability"), "not a sensor's")

        _ = mirror.apply(.valueChanged(temperature, value: MirrorValue(json: "21.5"), raw: [0x66, 0x08], at: t0), now: loopStart)
        #expect(
            published(mirror.apply(.availabilityChanged(temperature, unavailable: "no good reading for 30 s"), now: loopStart))
                == ["retained gattway/pi1/env/temperature/availability offline"])
        #expect(mirror.apply(.availabilityChanged(temperature, unavailable: "still none"), now: loopStart).isEmpty, "no news")
        #expect(mirror.heartbeats(at: loopStart + .seconds(300)).isEmpty, "the old value is not current: not republished")
        #expect(
            mirror.nextHeartbeatCheck(after: loopStart + .seconds(300)).map { $0 > loopStart + .seconds(300) } == true,
            "nor is its heartbeat due: a check due at once would come back at once, forever")
        let state = published(
            mirror.apply(
                .peripheralState(
                    MirrorPeripheralState(
                        state: "poweredOn", advertising: true, unavailable: ["climate": "no good reading for 30 s"])), now: loopStart))
        #expect(state.count == 1 && state[0].hasSuffix(#","unavailable":{"climate":"no good reading for 30 s"}}"#), "\(state)")

        #expect(
            published(mirror.apply(.availabilityChanged(temperature, unavailable: nil), now: loopStart))
                == ["retained gattway/pi1/env/temperature/availability online"])
        _ = mirror.apply(
            .valueChanged(temperature, value: MirrorValue(json: "22"), raw: [0x98, 0x08], at: t0 + 400), now: loopStart + .seconds(400))
        #expect(published(mirror.heartbeats(at: loopStart + .seconds(460))).contains { $0.contains(#"env/temperature {"value":22,"#) })
    }

    /// After a crash or a power cut the broker still holds the centrals and subscriber lists of
    /// the phones connected then: what is retained there and no longer true is corrected (a
    /// departed phone's document cleared, a list published as it is now); what is true, and live
    /// messages, are left alone.
    @Test func retainedCentralsAndSubscribersLeftByAnEarlierRunAreCorrected() throws {
        var mirror = try Mirror(configuration: sampleConfiguration(discovery: nil))
        _ = mirror.apply(.centralConnected(MirrorCentral(address: tablet, mtu: 23, security: .none, since: t0)), now: loopStart)
        let gone = MQTTMessage(topic: "gattway/pi1/centrals/\(phone)", text: #"{"address":"\#(phone)"}"#, retain: true)
        #expect(mirror.route(gone) == .staleRetained(MQTTMessage(topic: "gattway/pi1/centrals/\(phone)", payload: [], retain: true)))
        let connected = try #require(mirror.retainedSnapshot.first { $0.topic == "gattway/pi1/centrals/\(tablet)" })
        #expect(mirror.route(connected) == .ignored, "true: left alone")
        let stale = MQTTMessage(
            topic: "gattway/pi1/env/temperature/subscribers",
            text: #"{"centrals":[{"address":"\#(phone)","kind":"notify"}]}"#, retain: true)
        #expect(
            published([.publish(try #require(staleCorrection(mirror.route(stale))), durable: false)])
                == [#"retained gattway/pi1/env/temperature/subscribers {"centrals":[]}"#])
        let removed = MQTTMessage(topic: "gattway/pi1/old/gone/subscribers", text: #"{"centrals":[]}"#, retain: true)
        #expect(mirror.route(removed) == .staleRetained(MQTTMessage(topic: removed.topic, payload: [], retain: true)))
        var live = gone
        live.retain = false
        #expect(mirror.route(live) == .ignored, "only what the broker kept from before")
        #expect(mirror.route(MQTTMessage(topic: gone.topic, payload: [], retain: true)) == .ignored, "already cleared")
    }

    func staleCorrection(_ inbound: MirrorInbound) -> MQTTMessage? {
        if case .staleRetained(let message) = inbound { return message }
        return nil
    }

    /// `mqtt.discovery` turned off after it was on: the device document published before is
    /// cleared (an empty retained message, which removes the device and its entities from Home
    /// Assistant), and nothing is remembered as published any more; a changed prefix clears the
    /// document under the old one.
    @Test func turningDiscoveryOffClearsTheDocumentPublishedBefore() throws {
        let remembered = try Mirror(configuration: sampleConfiguration()).componentsToRemember
        var off = try Mirror(configuration: sampleConfiguration(discovery: nil))
        off.publishedComponents = remembered
        off.publishedDiscoveryPrefix = "homeassistant"
        #expect(
            published(off.retainedSnapshot.map { .publish($0, durable: false) }).prefix(2)
                == ["retained gattway/pi1/availability online", "retained homeassistant/device/gattway_pi1/config "])
        #expect(off.componentsToRemember.isEmpty)
        off.publishedComponents = []
        #expect(!off.retainedSnapshot.contains { $0.topic.hasPrefix("homeassistant/") }, "cleared once")

        var moved = try Mirror(configuration: sampleConfiguration(discovery: "ha2"))
        moved.publishedComponents = remembered
        moved.publishedDiscoveryPrefix = "homeassistant"
        #expect(
            moved.retainedSnapshot.map(\.topic).prefix(3)
                == ["gattway/pi1/availability", "homeassistant/device/gattway_pi1/config", "ha2/device/gattway_pi1/config"])
        #expect(moved.componentsToRemember == remembered, "the same components, under the new prefix")
    }

    @Test func retainedSnapshotHoldsEverythingInOrder() throws {
        var mirror = try Mirror(configuration: sampleConfiguration(discovery: nil))
        _ = mirror.apply(.valueChanged(temperature, value: MirrorValue(json: "20"), raw: [20], at: t0), now: loopStart)
        _ = mirror.apply(.centralConnected(MirrorCentral(address: phone, mtu: 23, security: .none, since: t0)), now: loopStart)
        _ = mirror.apply(.subscribed(relay, central: phone, kind: .indicate), now: loopStart)
        #expect(
            mirror.retainedSnapshot.map(\.topic) == [
                "gattway/pi1/availability", "gattway/pi1/state", "gattway/pi1/env/temperature",
                "gattway/pi1/io/relay/subscribers", "gattway/pi1/centrals/AA:BB:CC:DD:EE:01"
            ])
        #expect(mirror.retainedSnapshot.allSatisfy { $0.retain })
        #expect(mirror.retainedSnapshot[0].string == "online")
        #expect(mirror.lastWill == MQTTWill(topic: "gattway/pi1/availability", payload: Array("offline".utf8)))
    }

    static let diagnosticComponents =
        #""connected_centrals":{"p":"sensor","name":"Connected centrals","unique_id":"gattway_pi1_connected_centrals","state_topic":"gattway/pi1/state","value_template":"{{ value_json.centrals | length }}","entity_category":"diagnostic","icon":"mdi:cellphone-link"},"#
        + #""notifications_sent":{"p":"sensor","name":"Notifications sent","unique_id":"gattway_pi1_notifications_sent","state_topic":"gattway/pi1/state","value_template":"{{ value_json.counters.get('sent', 0) }}","entity_category":"diagnostic","state_class":"total_increasing","icon":"mdi:bell-ring-outline"},"#
        + #""values_dropped":{"p":"sensor","name":"Values dropped","unique_id":"gattway_pi1_values_dropped","state_topic":"gattway/pi1/state","value_template":"{{ value_json.counters.get('dropped', 0) }}","entity_category":"diagnostic","state_class":"total_increasing","icon":"mdi:delete-alert-outline"},"#
        + #""mqtt_outbox":{"p":"sensor","name":"MQTT outbox","unique_id":"gattway_pi1_mqtt_outbox","state_topic":"gattway/pi1/state","value_template":"{{ value_json.outbox }}","entity_category":"diagnostic","state_class":"measurement","icon":"mdi:tray-full"},"#
        + #""uptime":{"p":"sensor","name":"Uptime","unique_id":"gattway_pi1_uptime","state_topic":"gattway/pi1/state","value_template":"{{ value_json.uptime }}","entity_category":"diagnostic","device_class":"duration","unit_of_measurement":"s","state_class":"total_increasing"},"#
        + #""controller_state":{"p":"sensor","name":"Controller state","unique_id":"gattway_pi1_controller_state","state_topic":"gattway/pi1/state","value_template":"{{ value_json.state }}","entity_category":"diagnostic","icon":"mdi:bluetooth-settings"},"#
        + #""pairing":{"p":"binary_sensor","name":"Pairing","unique_id":"gattway_pi1_pairing","state_topic":"gattway/pi1/state","value_template":"{{ 'ON' if value_json.pairing else 'OFF' }}","entity_category":"diagnostic","icon":"mdi:bluetooth-connect"}"#

    /// One retained device document: the device with gattway's version, the origin, one
    /// component per entity and the shared availability.
    @Test func homeAssistantDeviceDocument() throws {
        let messages = try Mirror(configuration: sampleConfiguration()).discoveryMessages
        #expect(messages.map(\.topic) == ["homeassistant/device/gattway_pi1/config"])
        #expect(messages[0].retain)
        #expect(
            messages[0].string
                == #"{"dev":{"identifiers":["gattway_pi1"],"name":"Garden Pi","manufacturer":"gattway","model":"BLE GATT gateway","sw_version":"1.2.3"},"o":{"name":"gattway","sw_version":"1.2.3","support_url":"https://github.com/gattway/gattway"},"cmps":{"#
                + #""env_temperature":{"p":"sensor","name":"Temperature","unique_id":"gattway_pi1_env_temperature","state_topic":"gattway/pi1/env/temperature","value_template":"{{ value_json.value }}","device_class":"temperature","unit_of_measurement":"°C","state_class":"measurement","suggested_display_precision":2},"#
                + #""io_relay":{"p":"switch","name":"Relay","unique_id":"gattway_pi1_io_relay","state_topic":"gattway/pi1/io/relay","value_template":"{{ 'true' if value_json.value else 'false' }}","device_class":"outlet","command_topic":"gattway/pi1/io/relay/set","payload_on":"true","payload_off":"false","state_on":"true","state_off":"false"},"#
                + Self.diagnosticComponents
                + #"},"availability":[{"topic":"gattway/pi1/availability","payload_available":"online","payload_not_available":"offline"}]}"#
        )
    }

    /// A writable text is a `text` entity whose edits reach `/set` as JSON; a writable number a
    /// `number` entity with its format's range; a disabled entity says so; overrides of icon and
    /// expiry are carried.
    @Test func textNumberAndOverridesInTheComponents() throws {
        let label = MirrorCharacteristicID(service: "io", characteristic: "label")
        let setpoint = MirrorCharacteristicID(service: "io", characteristic: "setpoint")
        let door = MirrorCharacteristicID(service: "io", characteristic: "door")
        let document = try Mirror(
            configuration: MirrorConfiguration(
                deviceID: "pi1",
                characteristics: [
                    MirrorCharacteristic(
                        id: label, acceptsSet: true, homeAssistant: HomeAssistantEntity(domain: .text, name: "Label", maxLength: 32)),
                    MirrorCharacteristic(
                        id: setpoint, acceptsSet: true,
                        homeAssistant: HomeAssistantEntity(
                            domain: .number, name: "Setpoint", deviceClass: "temperature", unit: "°C",
                            enabled: false, range: .init(min: "-3276.8", max: "3276.7", step: "0.1"))),
                    MirrorCharacteristic(
                        id: door,
                        homeAssistant: HomeAssistantEntity(
                            domain: .binarySensor, name: "Door", deviceClass: "door", icon: "mdi:door", expireAfter: 90),
                        heartbeat: .seconds(20))
                ], softwareVersion: "1.2.3")
        ).discoveryMessages[0].string
        #expect(
            document.contains(
                #""io_label":{"p":"text","name":"Label","unique_id":"gattway_pi1_io_label","state_topic":"gattway/pi1/io/label","value_template":"{{ value_json.value }}","command_topic":"gattway/pi1/io/label/set","command_template":"{{ value | to_json }}","max":32},"#
            ))
        #expect(
            document.contains(
                #""io_setpoint":{"p":"number","name":"Setpoint","unique_id":"gattway_pi1_io_setpoint","state_topic":"gattway/pi1/io/setpoint","value_template":"{{ value_json.value }}","device_class":"temperature","unit_of_measurement":"°C","command_topic":"gattway/pi1/io/setpoint/set","min":-3276.8,"max":3276.7,"step":0.1,"mode":"box","enabled_by_default":false},"#
            ))
        #expect(
            document.contains(
                #""io_door":{"p":"binary_sensor","name":"Door","unique_id":"gattway_pi1_io_door","state_topic":"gattway/pi1/io/door","value_template":"{{ 'ON' if value_json.value else 'OFF' }}","device_class":"door","icon":"mdi:door","expire_after":90},"#
            ), "the override wins over three heartbeats (60 s)")
    }

    static let pressEvents = [
        HomeAssistantEntity.EventType(code: 1, name: "single_press", triggerType: "button_short_press"),
        HomeAssistantEntity.EventType(code: 2, name: "double_press", triggerType: "button_double_press"),
        HomeAssistantEntity.EventType(code: 4, name: "long_press", triggerType: "button_long_press")
    ]

    /// A button's presses: an `event` entity whose template turns `{"value": <code>}` into
    /// `{"event_type": ...}`, and a device trigger per press; the values are not retained (a
    /// retained press would fire again whenever something subscribes) nor re-published.
    @Test func buttonPressesAreAnEventEntityWithDeviceTriggers() throws {
        let button = MirrorCharacteristicID(service: "io", characteristic: "button")
        var mirror = try Mirror(
            configuration: MirrorConfiguration(
                deviceID: "pi1",
                characteristics: [
                    MirrorCharacteristic(
                        id: button,
                        homeAssistant: HomeAssistantEntity(
                            domain: .event, name: "Button", deviceClass: "button", eventTypes: Self.pressEvents),
                        isEvent: true)
                ], softwareVersion: "1.2.3"))
        let document = mirror.discoveryMessages[0].string
        let template = "{1: 'single_press', 2: 'double_press', 4: 'long_press'}.get(value_json.value, '')"
        #expect(
            document.contains(
                #""io_button":{"p":"event","name":"Button","unique_id":"gattway_pi1_io_button","state_topic":"gattway/pi1/io/button","event_types":["single_press","double_press","long_press"],"value_template":"{\"event_type\": \"{{ "#
                    + template + #" }}\"}","device_class":"button"},"#), "\(document)")
        for (type, event) in [
            ("button_short_press", "single_press"), ("button_double_press", "double_press"), ("button_long_press", "long_press")
        ] {
            #expect(
                document.contains(
                    #""io_button_\#(event)":{"p":"device_automation","automation_type":"trigger","topic":"gattway/pi1/io/button","type":"\#(type)","subtype":"Button","payload":"\#(event)","value_template":"{{ "#
                        + template + #" }}"}"#), "\(event)")
        }
        let press = mirror.apply(.valueChanged(button, value: MirrorValue(json: "2"), raw: [2], at: t0), now: loopStart)
        #expect(published(press) == [#"gattway/pi1/io/button {"value":2,"ts":"2027-01-15T08:00:00.250Z"}"#])
        #expect(!mirror.retainedSnapshot.map(\.topic).contains("gattway/pi1/io/button"))
    }

    /// A raw payload is the code's byte, which Home Assistant's templates cannot read: no event.
    @Test func rawButtonPressesGetNoEventEntity() throws {
        let button = MirrorCharacteristicID(service: "io", characteristic: "button")
        let document = try Mirror(
            configuration: MirrorConfiguration(
                deviceID: "pi1",
                characteristics: [
                    MirrorCharacteristic(
                        id: button, payloadStyle: .raw,
                        homeAssistant: HomeAssistantEntity(domain: .event, name: "Button", eventTypes: Self.pressEvents),
                        isEvent: true)
                ], softwareVersion: "1.2.3")
        ).discoveryMessages[0].string
        #expect(!document.contains("io_button"))
    }

    /// Without a record, discovery waits for the survey of what the broker holds; then it migrates
    /// the per-entity entities (those marked announcedPerEntity, and the connected-centrals
    /// sensor) whose old documents the broker holds, and no other: migrate payload on each old
    /// topic and the topic cleared, then the device document (a message on an old topic after it
    /// would reach the new entity, which has the old discovery id).
    @Test func migrationFromPerEntityTopicsTheBrokerHoldsIsPublishedInOrder() throws {
        var configuration = sampleConfiguration()
        configuration.characteristics[0].homeAssistant?.announcedPerEntity = true
        var mirror = try Mirror(configuration: configuration)
        #expect(mirror.publishedComponents == nil, "no record: survey the broker")
        #expect(!mirror.retainedSnapshot.contains { $0.topic.hasPrefix("homeassistant/") }, "discovery waits")
        var survey = try #require(mirror.discoverySurvey)
        #expect(survey.subscriptions == ["homeassistant/device/gattway_pi1/config", "gattway/pi1/discovery-survey"])
        #expect(survey.marker == MQTTMessage(topic: "gattway/pi1/discovery-survey", payload: []))
        let held = MQTTMessage(topic: "homeassistant/sensor/gattway_pi1/env_temperature/config", text: "{}", retain: true)
        let takes = [
            survey.take(held),
            survey.take(MQTTMessage(topic: "homeassistant/sensor/gattway_pi2/uptime/config", text: "{}", retain: true)),
            survey.take(MQTTMessage(topic: "gattway/pi1/discovery-survey", payload: [], retain: true))
        ]
        #expect(takes == [false, false, true], "a per-entity document is routed as well; the marker is the survey's")
        #expect(!survey.isComplete, "a retained marker is not this one")
        let marker = survey.take(survey.marker)
        #expect(marker && survey.isComplete)
        #expect(survey.perEntityTopics == [held.topic])
        let discovery = mirror.finishDiscovery(survey)
        #expect(
            discovery.map { "\($0.retain ? "retained " : "")\($0.topic) \($0.string.prefix(26))" } == [
                #"retained homeassistant/sensor/gattway_pi1/env_temperature/config {"migrate_discovery":true}"#,
                "retained homeassistant/sensor/gattway_pi1/env_temperature/config ",
                #"retained homeassistant/device/gattway_pi1/config {"dev":{"identifiers":["ga"#
            ], "nothing sent to connected_centrals, whose old document the broker does not hold")
        #expect(mirror.publishedComponents == [], "the broker held no device document")
        #expect(mirror.discoverySurvey == nil)
        mirror.publishedComponents = mirror.componentsToRemember
        #expect(
            mirror.retainedSnapshot.filter { $0.topic.hasPrefix("homeassistant/") }.map(\.topic) == [
                "homeassistant/device/gattway_pi1/config"
            ])
        #expect(try Mirror(configuration: sampleConfiguration(discovery: nil)).discoverySurvey == nil, "discovery off")
    }

    /// Without a record, the device document the broker holds tells what was published: its
    /// components the configuration no longer has (a characteristic removed or renamed before the
    /// state directory was wiped) are removals in the new document, and remembered.
    @Test func aSurveyedDocumentsLostComponentsAreRemoved() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        var survey = try #require(mirror.discoverySurvey)
        let document =
            #"{"dev":{"identifiers":["gattway_pi1"]},"cmps":{"env_humidity":{"p":"sensor","name":"Humidity"},"#
            + #""env_old":{"p":"binary_sensor"},"io_relay":{"p":"switch"}}}"#
        let taken = survey.take(MQTTMessage(topic: "homeassistant/device/gattway_pi1/config", text: document, retain: true))
        #expect(taken)
        #expect(
            survey.components == [
                HomeAssistantComponent(platform: "sensor", id: "env_humidity"),
                HomeAssistantComponent(platform: "binary_sensor", id: "env_old"),
                HomeAssistantComponent(platform: "switch", id: "io_relay")
            ])
        let published = mirror.finishDiscovery(survey)
        #expect(published.count == 1)
        #expect(
            published[0].string.contains(#","env_humidity":{"p":"sensor"},"env_old":{"p":"binary_sensor"}},"availability""#))
        #expect(mirror.componentsToRemember.contains(HomeAssistantComponent(platform: "sensor", id: "env_humidity")))
        #expect(DiscoverySurvey.components(ofDocument: Array("not json".utf8)).isEmpty)
        #expect(
            DiscoverySurvey.components(ofDocument: Array(#"{"components":{"a":{"platform":"sensor"}}}"#.utf8))
                == [HomeAssistantComponent(platform: "sensor", id: "a")])
    }

    /// Whatever per-entity document is still retained for this device (a sensor removed from the
    /// configuration while earlier gattway versions announced it) is cleared; the device's own topic, the
    /// topics of its components (the migration clears those, before the device document), other
    /// devices' topics, empty payloads and live (not retained) messages are not.
    @Test func stalePerEntityDocumentsAreCleared() throws {
        let mirror = try Mirror(configuration: sampleConfiguration())
        #expect(mirror.inboundSubscriptions.contains("homeassistant/+/gattway_pi1/+/config"))
        let stale = "homeassistant/binary_sensor/gattway_pi1/io_window/config"
        #expect(mirror.route(MQTTMessage(topic: stale, text: "{}", retain: true)) == .stalePerEntityDiscovery(stale))
        #expect(mirror.route(MQTTMessage(topic: stale, text: "{}", retain: false)) == .ignored)
        #expect(mirror.route(MQTTMessage(topic: stale, payload: [], retain: true)) == .ignored)
        #expect(mirror.route(MQTTMessage(topic: "homeassistant/sensor/gattway_pi2/x/config", text: "{}", retain: true)) == .ignored)
        #expect(mirror.route(MQTTMessage(topic: "homeassistant/device/gattway_pi1/config", text: "{}", retain: true)) == .ignored)
        let current = "homeassistant/switch/gattway_pi1/io_relay/config"
        #expect(mirror.route(MQTTMessage(topic: current, text: "{}", retain: true)) == .ignored, "a component's own: migrated")
    }

    /// A characteristic left out of the configuration after a document carried it is published
    /// as `{"p": <platform>}` under its key, which is how Home Assistant removes the entity; it
    /// stays remembered, so the removal goes out again whenever discovery does.
    @Test func aRemovedCharacteristicIsPublishedAsARemoval() throws {
        var mirror = try Mirror(configuration: sampleConfiguration())
        let remembered = mirror.componentsToRemember
        #expect(remembered.contains(HomeAssistantComponent(platform: "sensor", id: "env_temperature")))
        #expect(remembered.count == 9, "two characteristics, seven diagnostics")
        var configuration = sampleConfiguration()
        configuration.characteristics.removeFirst()
        mirror = try Mirror(configuration: configuration)
        mirror.publishedComponents = remembered
        let document = mirror.discoveryMessages[0].string
        #expect(document.contains(#""controller_state":{"#))
        #expect(document.contains(#","env_temperature":{"p":"sensor"}},"availability""#), "after the components")
        #expect(mirror.componentsToRemember == remembered)
    }

    /// Home Assistant marks a sensor unavailable after three heartbeats without a value; a
    /// switch takes no `expire_after`, and without a heartbeat there is none.
    @Test func expireAfterIsThreeHeartbeats() throws {
        var configuration = sampleConfiguration()
        configuration.characteristics[0].heartbeat = .seconds(20)
        configuration.characteristics[1].heartbeat = .seconds(20)
        let document = try Mirror(configuration: configuration).discoveryMessages[0].string
        #expect(document.contains(#""suggested_display_precision":2,"expire_after":60},"#))
        #expect(document.components(separatedBy: "expire_after").count == 2, "not the switch, not the diagnostics")
        #expect(try !Mirror(configuration: sampleConfiguration()).discoveryMessages[0].string.contains("expire_after"))
    }

    @Test(arguments: [
        (Duration.seconds(20), Int64(60)), (.milliseconds(20_001), 61), (.milliseconds(333), 1), (.milliseconds(1), 1),
        (.seconds(86_400), 259_200)
    ])
    func expireAfterIsInWholeSecondsRoundedUp(heartbeat: Duration, seconds: Int64) {
        #expect(HomeAssistantDiscovery.expireAfter(heartbeat) == seconds)
    }

    @Test(arguments: [
        (MirrorConfiguration(deviceID: "a/b", characteristics: [], softwareVersion: "1"), "device id 'a/b' contains '/'"),
        (
            MirrorConfiguration(
                deviceID: "pi", characteristics: [MirrorCharacteristic(id: .init(service: "s", characteristic: "#"))], softwareVersion: "1"),
            "characteristic name in s '#' contains '#'"
        ),
        (
            MirrorConfiguration(
                deviceID: "pi", characteristics: [MirrorCharacteristic(id: .init(service: "centrals", characteristic: "x"))],
                softwareVersion: "1"),
            "service name 'centrals' is reserved"
        ),
        (
            MirrorConfiguration(
                deviceID: "pi", characteristics: [MirrorCharacteristic(id: relay), MirrorCharacteristic(id: relay)], softwareVersion: "1"),
            "characteristic io/relay appears twice"
        ),
        (
            MirrorConfiguration(
                deviceID: "pi", characteristics: [MirrorCharacteristic(id: relay, sourceTopic: "a/+/b")], softwareVersion: "1"),
            "source topic of io/relay 'a/+/b'"
        ),
        (MirrorConfiguration(baseTopic: "", deviceID: "pi", characteristics: [], softwareVersion: "1"), "base topic")
    ])
    func invalidNamesAreRejectedClearly(configuration: MirrorConfiguration, message: String) {
        #expect {
            try Mirror(configuration: configuration)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    /// The hand-written timestamps read as Foundation's ISO 8601 format writes them, for times
    /// across the years and at every kind of fraction (milliseconds truncated).
    @Test func timestampsAreFoundationsISO8601WithMilliseconds() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        var generator = SystemRandomNumberGenerator()
        // Leap days (1972, 2000, 2400; none in 2100), the ends of years and of a century.
        let fixed: [TimeInterval] = [
            0, 0.001, 0.0005, 0.999, 0.9999, 1.123, 59.9996, 31_535_999, 68_169_600, 946_684_799.9995,
            951_782_400.5, 1_795_651_644.123, 4_107_542_399.999, 4_107_628_800, 13_574_563_200
        ]
        let random = (0..<2000).map { _ in TimeInterval(Double.random(in: 0..<4_102_444_800, using: &generator)) }
        for interval in fixed + random {
            let date = Date(timeIntervalSince1970: interval)
            #expect(MirrorTimestamp.string(date) == date.formatted(style), "\(interval)")
        }
    }

    /// One writer for a run of timestamps, as the mirror has for its values: within a second it
    /// reuses the second's text, and a new second (the next, an earlier one, another day) gets its
    /// own.
    @Test func aTimestampWriterWritesEachTimestampWholeWhateverCameBefore() {
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
        let intervals: [TimeInterval] = [
            1_795_651_644.123, 1_795_651_644.999, 1_795_651_644.0005, 1_795_651_645.001, 1_795_651_643.5,
            1_795_651_643.75, 1_795_737_643.75, 951_782_400.5, 951_782_400.25, -0.5, -0.25, 0
        ]
        var writer = MirrorTimestampWriter()
        for interval in intervals {
            let date = Date(timeIntervalSince1970: interval)
            let text = String(unsafeUninitializedCapacity: MirrorTimestamp.length) { text in
                writer.write(date, to: text.baseAddress!)
                return MirrorTimestamp.length
            }
            #expect(text == date.formatted(style), "\(interval)")
        }
    }

    /// A value's payload, written straight into bytes, is what the JSON writer makes of it.
    @Test(arguments: ["21.5", "-0.25", "true", "null", #""a \"quoted\" °C""#, #""0aff""#])
    func aValuePayloadIsTheJSONObjectOfItsValueAndTime(_ literal: String) {
        let date = Date(timeIntervalSince1970: 1_795_651_644.123)
        let object = JSONText.object([("value", .literal(literal)), ("ts", .string(MirrorTimestamp.string(date)))])
        var timestamps = MirrorTimestampWriter()
        var payload = Array("what the payload held before".utf8)
        Mirror.writeValuePayload(MirrorValue(json: literal), at: date, timestamps: &timestamps, into: &payload)
        #expect(payload == object.bytes)
    }

    @Test func jsonEscapesStrings() {
        #expect(JSONText.string("a\"b\\c\nd\u{1}é").encoded == #""a\"b\\c\nd\u0001é""#)
        #expect(JSONText.string("\r\t\u{1f}\u{7f} 21.5 °C 🌡").encoded == "\"\\r\\t\\u001f\u{7f} 21.5 °C 🌡\"")
        #expect(JSONText.object([("k", .bool(true))]).bytes == Array(#"{"k":true}"#.utf8))
        #expect(JSONText.array([.integer(-3), .null, .literal("0.5")]).encoded == "[-3,null,0.5]")
    }
}
