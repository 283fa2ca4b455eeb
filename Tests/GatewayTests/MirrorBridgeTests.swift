import BluetoothGATT
import Config
import Foundation
import Gateway
import Logging
import LoopClock
import MQTTClient
import MQTTMirror
import Testing
import Values

/// Configuration → MQTT mirror settings, pipeline events → mirror events, and `/set` validated
/// against the characteristic's format before it reaches the pipeline.
@Suite(.timeLimit(.minutes(1)))
struct MirrorBridgeTests {
    static let yaml =
        ValuePipelineTests.yaml + """

                  - uuid: 6E400008-B5A3-F393-E0A9-E50E24DC0001
                    name: outside
                    format: sint16
                    exponent: -1
                    source: {mqtt: weather/outside}
            mqtt:
              url: mqtt://127.0.0.1:1883
              base_topic: home
            """

    @Test func mirrorConfigurationFollowsTheServices() throws {
        let loaded = try ConfigLoader.load(file: "deploy/config/demo.yaml").config
        let mqtt = try #require(loaded.mqtt)
        let mirror = MirrorMapping.mirrorConfiguration(loaded, mqtt: mqtt, layout: GATTLayout(config: loaded))
        #expect(mirror.baseTopic == "gattway")
        #expect(mirror.deviceID == "demo")
        #expect(mirror.deviceName == "gattway demo")
        #expect(
            mirror.characteristics.map(\.id.description) == [
                "environment/temperature", "environment/humidity", "gateway/door", "gateway/flow", "gateway/level",
                "gateway/knob", "gateway/relay", "gateway/label", "gateway/button"
            ])
        let byName = Dictionary(uniqueKeysWithValues: mirror.characteristics.map { ($0.id.description, $0) })
        #expect(
            byName["environment/temperature"]?.homeAssistant
                == HomeAssistantEntity(
                    domain: .sensor, name: "temperature", deviceClass: "temperature", unit: "°C", stateClass: "measurement",
                    displayPrecision: 2, announcedPerEntity: true))
        #expect(
            byName["gateway/door"]?.homeAssistant
                == HomeAssistantEntity(domain: .binarySensor, name: "door", deviceClass: "door", announcedPerEntity: true))
        #expect(
            byName["gateway/relay"]?.homeAssistant
                == HomeAssistantEntity(domain: .switch, name: "relay", deviceClass: "outlet", announcedPerEntity: true))
        #expect(
            byName["gateway/level"]?.homeAssistant
                == HomeAssistantEntity(
                    domain: .sensor, name: "level", deviceClass: "distance", unit: "m", stateClass: "measurement",
                    displayPrecision: 3, announcedPerEntity: true))
        #expect(byName["gateway/button"]?.homeAssistant?.domain == .event)
        #expect(byName["gateway/button"]?.isEvent == true)
        #expect(byName["gateway/flow"]?.homeAssistant?.displayPrecision == nil, "a float carries no fixed precision")
        #expect(byName["gateway/label"]?.homeAssistant == HomeAssistantEntity(domain: .text, name: "label", maxLength: 32))
        #expect(byName["environment/temperature"]?.heartbeat == .seconds(30), "notify.max_interval")
        #expect(byName["environment/humidity"]?.heartbeat == nil)
        #expect(byName["gateway/label"]?.acceptsSet == true)
        #expect(try Mirror(configuration: mirror).inboundSubscriptions.contains("gattway/demo/gateway/relay/set"))
    }

    /// A binary sensor with `press`: its `press` reading is an `event` entity (a button) with the
    /// presses it tells apart, under the codes the characteristic carries, and an event on MQTT
    /// (not retained); its level stays a binary sensor.
    @Test func pressesBecomeAnEventEntity() throws {
        func mirror(_ press: String) throws -> [String: MirrorCharacteristic] {
            let yaml = """
                gpio:
                  backend: simulated
                  chips:
                    - lines:
                        - name: BTN
                sensors:
                  - {id: button, kind: binary, line: BTN, press: \(press)}
                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        name: presses
                        format: uint8
                        unit: hertz              # a Presentation Format unit, not Home Assistant's
                        source: {sensor: button, reading: press}
                      - uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0001
                        name: pressed
                        format: bool
                        source: {sensor: button}
                mqtt:
                  url: mqtt://127.0.0.1:1883
                """
            let config = try ConfigLoader.load(yaml: yaml).config
            let mirror = MirrorMapping.mirrorConfiguration(config, mqtt: try #require(config.mqtt), layout: GATTLayout(config: config))
            return Dictionary(uniqueKeysWithValues: mirror.characteristics.map { ($0.id.characteristic, $0) })
        }
        let characteristics = try mirror("{}")
        #expect(
            characteristics["presses"]?.homeAssistant
                == HomeAssistantEntity(
                    domain: .event, name: "presses", deviceClass: "button",
                    eventTypes: [
                        .init(code: 1, name: "single_press", triggerType: "button_short_press"),
                        .init(code: 2, name: "double_press", triggerType: "button_double_press"),
                        .init(code: 4, name: "long_press", triggerType: "button_long_press")
                    ]), "no per-entity topic to migrate from")
        #expect(characteristics["presses"]?.isEvent == true)
        #expect(characteristics["pressed"]?.isEvent == false)
        #expect(characteristics["pressed"]?.homeAssistant?.domain == .binarySensor)
        let noDouble = try mirror("{double_press_window: 0s}")
        #expect(noDouble["presses"]?.homeAssistant?.eventTypes.map(\.name) == ["single_press", "long_press"])
    }

    /// A counter sums as `total_increasing`, a writable number gets its format's range in steps of
    /// its resolution, a written bool is a switch, and `homeassistant:` wins over all of it.
    @Test func entitiesFollowWhatEachCharacteristicIs() throws {
        let yaml = """
            gpio:
              backend: simulated
              chips:
                - lines:
                    - name: GPIO5
                    - name: GPIO6
            sensors:
              - id: water
                kind: counter
                line: GPIO5
              - id: hall_pir
                kind: binary
                line: GPIO6
            services:
              - uuid: 181A
                name: s
                characteristics:
                  - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                    name: water
                    format: uint32
                    source: {sensor: water}
                  - uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0001
                    name: water_litres
                    format: uint32
                    exponent: -1
                    source: {sensor: water}
                    homeassistant:
                      device_class: water
                      state_class: total
                      unit: L
                      icon: mdi:water
                      expire_after: 90s
                      name: Water
                      enabled: false
                  - uuid: 6E400004-B5A3-F393-E0A9-E50E24DC0001
                    name: hall
                    format: bool
                    source: {sensor: hall_pir}
                  - uuid: 6E400005-B5A3-F393-E0A9-E50E24DC0001
                    name: setpoint
                    format: sint16
                    exponent: -1
                    unit: celsius
                    properties: [read, write]
                    source: {written: 20}
                  - uuid: 6E400006-B5A3-F393-E0A9-E50E24DC0001
                    name: heating
                    format: bool
                    properties: [read, write]
                    source: {written: false}
                  - uuid: 6E400007-B5A3-F393-E0A9-E50E24DC0001
                    name: fixed
                    format: uint8
                    source: {static: 1}
            mqtt:
              url: mqtt://127.0.0.1:1883
            """
        let config = try ConfigLoader.load(yaml: yaml).config
        let mirror = MirrorMapping.mirrorConfiguration(config, mqtt: try #require(config.mqtt), layout: GATTLayout(config: config))
        let entity = Dictionary(uniqueKeysWithValues: mirror.characteristics.map { ($0.id.characteristic, $0.homeAssistant) })
        #expect(
            entity["water"]
                == HomeAssistantEntity(
                    domain: .sensor, name: "water", stateClass: "total_increasing", displayPrecision: 0, announcedPerEntity: true))
        #expect(
            entity["water_litres"]
                == HomeAssistantEntity(
                    domain: .sensor, name: "Water", deviceClass: "water", unit: "L", stateClass: "total", displayPrecision: 1,
                    icon: "mdi:water", expireAfter: 90, enabled: false, announcedPerEntity: true))
        #expect(entity["hall"]??.deviceClass == "motion", "pir in the sensor id")
        #expect(
            entity["setpoint"]
                == HomeAssistantEntity(
                    domain: .number, name: "setpoint", deviceClass: "temperature", unit: "°C",
                    range: .init(min: "-3276.8", max: "3276.7", step: "0.1")))
        #expect(entity["heating"] == HomeAssistantEntity(domain: .switch, name: "heating", deviceClass: "switch"))
        #expect(entity["fixed"] == .some(nil))
    }

    @Test(arguments: [
        (["front_door", "contact"], "door"), (["garage_door"], "garage_door"), (["window"], "window"),
        (["pir"], "motion"), (["hall", "motion"], "motion"), (["leak"], "moisture"), (["button"], nil)
    ])
    func binaryDeviceClassFromNames(names: [String], deviceClass: String?) {
        #expect(MirrorMapping.binaryDeviceClass(names) == deviceClass)
    }

    /// Characteristics in each kind of number format, fed by MQTT source topics.
    static let formatsYAML =
        ValuePipelineTests.yaml + """

                  - uuid: 6E400011-B5A3-F393-E0A9-E50E24DC0001
                    name: single
                    format: float32
                    source: {mqtt: in/single}
                  - uuid: 6E400012-B5A3-F393-E0A9-E50E24DC0001
                    name: centi
                    format: sint16
                    exponent: -2
                    source: {mqtt: in/centi}
                  - uuid: 6E400013-B5A3-F393-E0A9-E50E24DC0001
                    name: tens
                    format: uint8
                    exponent: 1
                    source: {mqtt: in/tens}
                  - uuid: 6E400014-B5A3-F393-E0A9-E50E24DC0001
                    name: thermometer
                    format: sfloat
                    source: {mqtt: in/thermometer}
            mqtt:
              url: mqtt://127.0.0.1:1883
            """

    /// MQTT shows the value the bytes on air carry, at the precision of the characteristic's
    /// format: what a phone reads, not the reading or payload before it was encoded.
    @Test func mqttPrintsTheValueAPhoneReads() async throws {
        var fixture = try await PipelineFixture(yaml: Self.formatsYAML)
        let config = try ConfigLoader.load(yaml: Self.formatsYAML).config
        let bridge = MirrorBridge(layout: fixture.layout, address: { "\($0)" })
        var mirror = try Mirror(
            configuration: MirrorMapping.mirrorConfiguration(config, mqtt: try #require(config.mqtt), layout: fixture.layout))
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.537))
        let sourced = [("single", "0.750000027"), ("centi", "-0.049"), ("tens", "254"), ("thermometer", "36.66")]
        for (name, payload) in sourced {
            await bridge.sourceValue(
                [MirrorCharacteristicID(service: "gateway", characteristic: name)], payload: Array(payload.utf8),
                pipeline: fixture.pipeline, logger: Logger(label: "test"))
        }
        var printed: [String] = []
        while printed.count < 1 + sourced.count, let event = await fixture.pipelineEvents.next() {
            guard case .valueChanged = event else { continue }
            for case .publish(let message, _) in mirror.apply(
                try #require(bridge.mirrorEvent(event, at: Date(timeIntervalSince1970: 0))), now: LoopInstant(nanoseconds: 0))
            {
                printed.append("\(message.topic) \(message.text ?? "")")
            }
        }
        #expect(
            printed == [
                #"gattway/pipeline/environment/temperature {"value":21.54,"ts":"1970-01-01T00:00:00.000Z"}"#,
                #"gattway/pipeline/gateway/single {"value":0.75,"ts":"1970-01-01T00:00:00.000Z"}"#,
                #"gattway/pipeline/gateway/centi {"value":-0.05,"ts":"1970-01-01T00:00:00.000Z"}"#,
                #"gattway/pipeline/gateway/tens {"value":250,"ts":"1970-01-01T00:00:00.000Z"}"#,
                #"gattway/pipeline/gateway/thermometer {"value":36.7,"ts":"1970-01-01T00:00:00.000Z"}"#
            ])
    }

    @Test func clientConfigurationCarriesBrokerAndCredentials() throws {
        let loaded = try ConfigLoader.load(
            yaml: """
                device: {name: x}
                gpio: {backend: simulated}
                mqtt:
                  url: mqtts://broker.lan:8884
                  client_id: pi
                  username: gw
                  password_env: GW_PASSWORD
                  protocol: "3.1.1"
                  keepalive: 20s
                """
        ).config
        let client = MirrorMapping.clientConfiguration(try #require(loaded.mqtt))
        #expect(client.host == "broker.lan")
        #expect(client.port == 8884)
        #expect(client.clientID == "pi")
        #expect(client.protocolVersion == .v311)
        #expect(client.keepalive == .seconds(20))
        #expect(client.tls != nil, "mqtts:// means TLS")
        #expect(client.credentials == MQTTCredentials(username: "gw", password: .environment("GW_PASSWORD")))
    }

    @Test func setIsValidatedAgainstTheFormatBeforeItChangesAnything() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let bridge = MirrorBridge(layout: fixture.layout, address: { "\($0)" })
        let label = MirrorCharacteristicID(service: "gateway", characteristic: "label")
        #expect(await bridge.set(label, payload: Array(#"{"value": "new"}"#.utf8), pipeline: fixture.pipeline) == .accepted)
        #expect(await fixture.pipeline.currentBytes(fixture.ref("gateway/label")) == Array("new".utf8))
        let rejections = [
            Array("42".utf8),  // wrong type
            Array(#""much too long""#.utf8),  // longer than max_length 8
            Array("{not json".utf8),
            [0xFF, 0xFE]  // not UTF-8
        ]
        for payload in rejections {
            let result = await bridge.set(label, payload: payload, pipeline: fixture.pipeline)
            guard case .rejected(let reason) = result else {
                Issue.record("accepted \(payload)")
                continue
            }
            #expect(!reason.isEmpty)
        }
        #expect(await fixture.pipeline.currentBytes(fixture.ref("gateway/label")) == Array("new".utf8))
        // A sensor's reading is read-only for centrals, so for MQTT too: refused, value unchanged.
        let temperature = MirrorCharacteristicID(service: "environment", characteristic: "temperature")
        let measured = await fixture.pipeline.currentBytes(fixture.ref("environment/temperature"))
        #expect(
            await bridge.set(temperature, payload: Array("21.5".utf8), pipeline: fixture.pipeline)
                == .rejected(
                    reason: "read-only: centrals cannot write environment/temperature (its properties have no write), so /set cannot either"
                ))
        #expect(await fixture.pipeline.currentBytes(fixture.ref("environment/temperature")) == measured)
        // An output's /set drives the line.
        let relay = MirrorCharacteristicID(service: "gateway", characteristic: "relay")
        #expect(await bridge.set(relay, payload: Array("true".utf8), pipeline: fixture.pipeline) == .accepted)
        #expect(fixture.outputs.all == ["relay=true"])
        // A line that cannot be driven: the /set is refused with the reason, for the error topic.
        fixture.outputs.failFromNowOn()
        #expect(
            await bridge.set(relay, payload: Array("false".utf8), pipeline: fixture.pipeline)
                == .rejected(reason: "driving output relay failed: the line is gone"))
    }

    /// A characteristic that takes its value from an MQTT topic is not gattway's to set, even
    /// when centrals may write it: `/set` is refused with the reason and changes nothing.
    @Test func setIsRefusedOnAnMQTTSourcedCharacteristicEvenWhenWritable() async throws {
        // The key's own indentation, from the line that holds it.
        let line = try #require(Self.yaml.split(separator: "\n").first { $0.contains("source: {mqtt: weather/outside}") })
        let indent = String(line.prefix { $0 == " " })
        let yaml = Self.yaml.replacingOccurrences(
            of: "source: {mqtt: weather/outside}",
            with: "source: {mqtt: weather/outside}\n\(indent)properties: [read, write]\n\(indent)permissions: {write: open}")
        let fixture = try await PipelineFixture(yaml: yaml)
        #expect(fixture.layout.characteristics[fixture.ref("gateway/outside")]?.config.properties.isWritable == true)
        let bridge = MirrorBridge(layout: fixture.layout, address: { "\($0)" })
        let outside = MirrorCharacteristicID(service: "gateway", characteristic: "outside")
        await bridge.sourceValue([outside], payload: Array("12.5".utf8), pipeline: fixture.pipeline, logger: .init(label: "test"))
        #expect(
            await bridge.set(outside, payload: Array("30".utf8), pipeline: fixture.pipeline)
                == .rejected(reason: "gateway/outside takes its value from MQTT topic weather/outside: publish there, not to /set"))
        #expect(await fixture.pipeline.currentBytes(fixture.ref("gateway/outside")) == sint16(125), "unchanged")
    }

    /// An MQTT-sourced characteristic: its topic is subscribed only while a central is subscribed
    /// to the characteristic, and what arrives there becomes its value when it fits the format.
    @Test func sourceTopicFollowsTheBLESubscriptionAndFeedsTheValue() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let config = try ConfigLoader.load(yaml: Self.yaml).config
        let bridge = MirrorBridge(layout: fixture.layout, address: { "c\($0.rawValue)" })
        var mirror = try Mirror(
            configuration: MirrorMapping.mirrorConfiguration(
                config, mqtt: try #require(config.mqtt), layout: fixture.layout))
        let outside = fixture.ref("gateway/outside")
        let date = Date()
        #expect(!mirror.inboundSubscriptions.contains("weather/outside"))
        let subscribe = mirror.apply(
            try #require(bridge.mirrorEvent(.subscribed(outside, CentralID(1), .notification), at: date)), now: LoopInstant(nanoseconds: 0))
        #expect(subscribe.contains(.subscribe("weather/outside")))
        let unsubscribe = mirror.apply(
            try #require(bridge.mirrorEvent(.unsubscribed(outside, CentralID(1)), at: date)), now: LoopInstant(nanoseconds: 0))
        #expect(unsubscribe.contains(.unsubscribe("weather/outside")))

        let id = MirrorCharacteristicID(service: "gateway", characteristic: "outside")
        await bridge.sourceValue([id], payload: Array("12.5".utf8), pipeline: fixture.pipeline, logger: .init(label: "test"))
        #expect(await fixture.pipeline.currentBytes(outside) == sint16(125))
        await bridge.sourceValue([id], payload: Array("warm".utf8), pipeline: fixture.pipeline, logger: .init(label: "test"))
        #expect(await fixture.pipeline.currentBytes(outside) == sint16(125), "a payload that does not fit changes nothing")
    }

    @Test func pipelineEventsBecomeMirrorEvents() throws {
        let config = try ConfigLoader.load(yaml: Self.yaml).config
        let layout = GATTLayout(config: config)
        let bridge = MirrorBridge(layout: layout, address: { "AA:BB:CC:DD:EE:\(String(format: "%02X", $0.rawValue))" })
        let date = Date(timeIntervalSince1970: 0)
        let label = try #require(layout.ref("gateway/label"))
        let id = MirrorCharacteristicID(service: "gateway", characteristic: "label")
        #expect(
            bridge.mirrorEvent(.valueChanged(label, [0x78]), at: date)
                == .valueChanged(id, value: MirrorValue(json: #""x""#), raw: [0x78], at: date))
        #expect(
            bridge.mirrorEvent(.subscribed(label, CentralID(1), .indication), at: date)
                == .subscribed(id, central: "AA:BB:CC:DD:EE:01", kind: .indicate))
        for (kind, mirrored) in [(GATTWriteKind.request, MirrorWriteKind.request), (.command, .command), (.prepared, .prepared)] {
            #expect(
                bridge.mirrorEvent(.written(label, CentralID(3), [0x79], kind), at: date)
                    == .written(id, value: MirrorValue(json: #""y""#), central: "AA:BB:CC:DD:EE:03", kind: mirrored, at: date))
        }
        #expect(
            bridge.mirrorEvent(.centralConnected(CentralID(2), mtu: 23), at: date)
                == .centralConnected(MirrorCentral(address: "AA:BB:CC:DD:EE:02", mtu: 23, security: .none, since: date)))
        #expect(
            bridge.mirrorEvent(.mtuChanged(CentralID(2), mtu: 185), at: date)
                == .centralMTUChanged(address: "AA:BB:CC:DD:EE:02", mtu: 185))
        // Encryption, pairing and bonding re-publish the central with its real link security.
        let justWorks = LinkSecurity(isEncrypted: true, isAuthenticated: false, isBonded: true)
        #expect(
            bridge.mirrorEvent(.securityChanged(CentralID(2), justWorks), at: date)
                == .centralSecurityChanged(address: "AA:BB:CC:DD:EE:02", security: .encrypted, bonded: true))
        let passkey = LinkSecurity(isEncrypted: true, isAuthenticated: true)
        #expect(
            bridge.mirrorEvent(.securityChanged(CentralID(2), passkey), at: date)
                == .centralSecurityChanged(address: "AA:BB:CC:DD:EE:02", security: .authenticated, bonded: false))
        #expect(
            bridge.mirrorEvent(.securityChanged(CentralID(2), .unencrypted), at: date)
                == .centralSecurityChanged(address: "AA:BB:CC:DD:EE:02", security: .none, bonded: false))
        #expect(
            bridge.mirrorEvent(.status(peripheral: "poweredOn", advertising: true, counters: ["sent": 3]), at: date)
                == .peripheralState(MirrorPeripheralState(state: "poweredOn", advertising: true, counters: ["sent": 3])))
    }

    /// An event of a characteristic the bridge's layout does not have (one a reload renamed, at
    /// the same place) becomes no mirror event: it has no topic.
    @Test func anEventOfAnotherLayoutsCharacteristicIsNotMirrored() throws {
        let layout = GATTLayout(config: try ConfigLoader.load(yaml: Self.yaml).config)
        let renamed = GATTLayout(
            config: try ConfigLoader.load(yaml: Self.yaml.replacingOccurrences(of: "name: outside", with: "name: outdoors")).config)
        let bridge = MirrorBridge(layout: layout, address: { "c\($0.rawValue)" })
        let outdoors = try #require(renamed.ref("gateway/outdoors"))
        let date = Date(timeIntervalSince1970: 0)
        #expect(bridge.mirrorEvent(.valueChanged(outdoors, [0x7D, 0x00]), at: date) == nil)
        #expect(bridge.mirrorEvent(.subscribed(outdoors, CentralID(1), .notification), at: date) == nil)
        let outside = try #require(layout.ref("gateway/outside"))
        #expect(bridge.mirrorEvent(.valueChanged(outside, [0x7D, 0x00]), at: date) != nil)
    }
}
