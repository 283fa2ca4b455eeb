import BluetoothCore
import BluetoothHCI
import Config
import ConfigReading
import Foundation
import MQTTMirror
import Notify
import Sensors
import Testing
import Values

struct ValidConfigTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func emptyFileGivesEveryDefault() throws {
        let config = try ConfigLoader.load(yaml: "").config
        #expect(config.device == DeviceConfig(name: "gattway", id: "gattway", appearance: 0x0540))
        #expect(config.bluetooth.transport == .userChannel(adapter: 0))
        #expect(config.bluetooth.advertising.localName == "gattway")
        #expect(config.bluetooth.advertising.interval == .milliseconds(100))
        #expect(config.bluetooth.maxCentrals == 3)
        #expect(
            config.bluetooth.connection
                == ConnectionPreferences(
                    minInterval: .milliseconds(30), maxInterval: .milliseconds(50), latency: 0,
                    supervisionTimeout: .seconds(4), asksCentrals: false),
            "without a bluetooth.connection section nothing is asked of centrals")
        #expect(
            config.bluetooth.security
                == SecurityConfig(
                    ioCapabilities: .noInputNoOutput, passkey: nil,
                    allowLegacy: false))
        #expect(config.stateDirectory == "/var/lib/gattway")
        #expect(config.gpio == GPIOConfig(backend: .libgpiod, simulatedChips: []))
        #expect(config.sensors.isEmpty && config.services.isEmpty && config.mqtt == nil)
    }

    @Test func deviceIDIsDerivedFromTheName() throws {
        let config = try ConfigLoader.load(yaml: "device: {name: Green House 2}").config
        #expect(config.device.id == "green-house-2")
        #expect(config.bluetooth.advertising.localName == "Green House 2")
    }

    /// A simulated chip labelled like a Pi's pin controller, named as Debian's kernel names it,
    /// answers to the BCM names as the simulator (and the real chip) does.
    @Test func raspberryPiNamesFindASimulatedPinControllersLinesByOffset() throws {
        let config = try ConfigLoader.load(
            yaml: """
                gpio:
                  backend: simulated
                  chips:
                    - label: pinctrl-bcm2835
                      lines: [{name: ID_SDA}, {name: ID_SCL}, {name: SDA1}, {name: SCL1}, {name: GPIO_GCLK}]
                sensors:
                  - {id: climate, kind: dht22, line: GPIO4}
                  - {id: door, kind: binary, line: pin3}
                """
        ).config
        #expect(config.sensors.map(\.kind.lines) == [[LineReference(name: "GPIO4", chip: nil)], [LineReference(name: "pin3", chip: nil)]])
    }

    @Test func sensorKindsAndFiltersAreRead() throws {
        let yaml = """
            sensors:
              - id: door
                kind: binary
                line: GPIO17
                chip: pinctrl-bcm2711
                bias: pull_up
                active_low: true
                debounce: 20ms
                hold_time: 100ms
                filters:
                  - invert: true
                  - delay_off: 2s
              - id: wind
                kind: rate
                line: GPIO22
                window: 3s
                per: minute
                scale: 0.5
                bthome: true
                filters:
                  - offset: -1
                  - scale: 2
                  - moving_average: 4
              - id: tank
                kind: distance
                trigger: GPIO23
                echo: GPIO24
              - id: climate
                kind: dht11
                line: GPIO4
                interval: 5s
              - id: knob
                kind: rotary_encoder
                a: GPIO5
                b: GPIO6
                wrap: 24
              - id: pump
                kind: output
                line: GPIO26
                initial: true
            """
        let loaded = try ConfigLoader.load(yaml: yaml)
        let sensors = loaded.config.sensors
        #expect(
            loaded.warnings.map(\.description) == [
                #"sensors[5].id (line 37): output "pump" is not the source of any writable characteristic, so nothing drives it"#
            ])
        let door = InputLineConfig(
            line: LineReference(name: "GPIO17", chip: "pinctrl-bcm2711"), bias: .pullUp,
            activeLow: true, debounce: .milliseconds(20))
        #expect(
            sensors[0]
                == SensorConfig(
                    id: "door", kind: BinarySensorConfig(input: door, holdTime: .milliseconds(100), press: nil),
                    filters: [.invert, .delayedOff(.seconds(2))], bthome: false))
        let wind = InputLineConfig(
            line: LineReference(name: "GPIO22", chip: nil), bias: .asIs, activeLow: false,
            debounce: .zero)
        #expect(
            sensors[1]
                == SensorConfig(
                    id: "wind", kind: RateSensorConfig(input: wind, window: .seconds(3), per: .minute, scale: 0.5),
                    filters: [.offset(-1), .scale(2), .movingAverage(4)], bthome: true))
        let echo = InputLineConfig(
            line: LineReference(name: "GPIO24", chip: nil), bias: .asIs, activeLow: false,
            debounce: .zero)
        #expect(
            sensors[2].kind as? DistanceSensorConfig
                == DistanceSensorConfig(
                    trigger: LineReference(name: "GPIO23", chip: nil), echo: echo,
                    interval: .seconds(1), timeout: .milliseconds(40)))
        #expect(
            sensors[3].kind as? DHTSensorConfig
                == DHTSensorConfig(model: .dht11, line: LineReference(name: "GPIO4", chip: nil), interval: .seconds(5)))
        guard let knob = sensors[4].kind as? RotaryEncoderSensorConfig else {
            Issue.record("knob is not an encoder")
            return
        }
        #expect(knob.transitionsPerStep == 4 && knob.wrap == 24)
        #expect(
            sensors[5].kind as? OutputSensorConfig
                == OutputSensorConfig(
                    line: LineReference(name: "GPIO26", chip: nil), activeLow: false,
                    initial: true))
    }

    /// A counter's total is saved, then reported, at most every `report_interval` (1 s unless set).
    @Test func aCountersReportIntervalIsRead() throws {
        let yaml = """
            sensors:
              - {id: rain, kind: counter, line: GPIO27, report_interval: 30s}
              - {id: water, kind: counter, line: GPIO22}
            """
        let sensors = try ConfigLoader.load(yaml: yaml).config.sensors
        #expect((sensors[0].kind as? CounterSensorConfig)?.reportInterval == .seconds(30))
        #expect((sensors[1].kind as? CounterSensorConfig)?.reportInterval == .seconds(1))
    }

    @Test func characteristicDefaultsFollowTheSourceAndTheSIGDefinition() throws {
        let yaml = """
            sensors:
              - {id: climate, kind: dht22, line: GPIO4}
              - {id: pump, kind: output, line: GPIO26}
            services:
              - uuid: 181A
                characteristics:
                  - uuid: 2A6F
                    source: {sensor: climate, reading: humidity}
                    notify: {min_interval: 250ms, max_interval: 1m, delta: 5%}
                  - uuid: 6E400006-B5A3-F393-E0A9-E50E24DC0001
                    name: pump
                    format: bool
                    source: {sensor: pump}
                  - uuid: 2A6E
                    source: {sensor: climate}
                  - uuid: pressure
                    source: {static: 101325}
            """
        let loaded = try ConfigLoader.load(yaml: yaml)
        let characteristics = loaded.config.services[0].characteristics
        #expect(characteristics[0].encoding == (try ValueEncoding(.uint16, exponent: -2)))
        #expect(characteristics[0].unit == .percent)
        #expect(characteristics[0].properties == [.read, .notify])
        #expect(characteristics[0].source == .sensor(id: "climate", reading: .humidity))
        #expect(
            characteristics[0].notify
                == NotifyPolicy(
                    minInterval: .milliseconds(250), maxInterval: .seconds(60), delta: .percent(5), onChange: true,
                    currentValueOnSubscribe: true))
        #expect(characteristics[1].properties == [.read, .write, .notify])
        #expect(characteristics[1].permissions == AttributePermissions(read: .open, write: .encryptedBonded))
        #expect(characteristics[2].source == .sensor(id: "climate", reading: .temperature))
        #expect(characteristics[2].encoding == (try ValueEncoding(.sint16, exponent: -2)))
        #expect(characteristics[3].uuid == BluetoothUUID(0x2A6D))
        #expect(characteristics[3].encoding == (try ValueEncoding(.uint32, exponent: -1)))
        #expect(characteristics[3].unit == .pascal)
        #expect(characteristics[3].source == .fixed(.number(101_325)))
        #expect(loaded.warnings.isEmpty)
    }

    /// `notify.on_subscribe`: on by default for a sensor source only; set either way.
    @Test func currentValueOnSubscribeDefaultsBySource() throws {
        let yaml = """
            mqtt: {url: "mqtt://broker"}
            sensors:
              - {id: door, kind: binary, line: GPIO17}
            services:
              - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                characteristics:
                  - {uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001, format: bool, source: {sensor: door}}
                  - uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0001
                    format: bool
                    source: {sensor: door}
                    notify: {on_subscribe: false}
                  - {uuid: 6E400004-B5A3-F393-E0A9-E50E24DC0001, format: uint8, source: {mqtt: home/level}}
                  - uuid: 6E400005-B5A3-F393-E0A9-E50E24DC0001
                    format: uint8
                    properties: [read, write, notify]
                    source: {written: 0}
                  - uuid: 6E400006-B5A3-F393-E0A9-E50E24DC0001
                    format: uint8
                    properties: [read, write, notify]
                    source: {written: 0}
                    notify: {on_subscribe: true}
            """
        let loaded = try ConfigLoader.load(yaml: yaml)
        let onSubscribe = loaded.config.services[0].characteristics.map(\.notify.currentValueOnSubscribe)
        #expect(onSubscribe == [true, false, false, false, true])
    }

    @Test func descriptorsAsTextOrBytes() throws {
        let yaml = """
            services:
              - uuid: 1815
                characteristics:
                  - uuid: 2A56
                    format: uint8
                    source: {static: 7}
                    descriptors:
                      - {uuid: 2901, value: Pump state}
                      - {uuid: 290C, hex: "01 00 02"}
            """
        let descriptors = try ConfigLoader.load(yaml: yaml).config.services[0].characteristics[0].descriptors
        #expect(
            descriptors == [
                DescriptorConfig(uuid: BluetoothUUID(0x2901), value: Array("Pump state".utf8)),
                DescriptorConfig(uuid: BluetoothUUID(0x290C), value: [0x01, 0x00, 0x02])
            ])
    }

    @Test func openWritableCharacteristicIsAWarningNotAnError() throws {
        let yaml = """
            services:
              - uuid: 1815
                characteristics:
                  - uuid: 2A56
                    format: utf8
                    source: {written: hello}
                    permissions: {write: open}
            """
        let loaded = try ConfigLoader.load(yaml: yaml)
        #expect(loaded.config.services[0].characteristics[0].source == .written(initial: .text("hello")))
        #expect(
            loaded.warnings.map(\.description) == [
                "services[0].characteristics[0].permissions (line 7): writable by any central without pairing (permissions.write: open)"
            ])
    }

    /// Numeric Comparison needs a button to confirm with; capabilities that lead to it without
    /// one are a warning (those pairings are refused).
    @Test func confirmButtonForNumericComparison() throws {
        let sensors = """
            gpio:
              backend: simulated
              chips: [{lines: [{name: BUTTON}]}]
            sensors:
              - {id: pair, kind: binary, line: BUTTON}
            """
        let confirmed = try ConfigLoader.load(
            yaml: """
                bluetooth:
                  security: {io_capabilities: keyboard_display, confirm_with: pair}
                """ + "\n" + sensors)
        #expect(confirmed.config.bluetooth.security.confirmWith == "pair")
        #expect(confirmed.warnings.isEmpty)
        let unconfirmed = try ConfigLoader.load(
            yaml: """
                bluetooth:
                  security: {io_capabilities: display_yes_no}
                """ + "\n" + sensors)
        #expect(unconfirmed.config.bluetooth.security.confirmWith == nil)
        #expect(
            unconfirmed.warnings.map(\.description) == [
                "bluetooth.security.io_capabilities (line 2): without confirm_with (a button to confirm the number), pairings that need Numeric Comparison are refused"
            ])
    }

    @Test func mqttSectionWithDefaults() throws {
        let ca = try MQTTFilesConfigTests.file("ca.pem")
        let yaml = """
            device: {id: shed}
            mqtt:
              url: mqtts://broker.lan
              password_env: GATTWAY_MQTT_PASSWORD
              tls: {ca: \(ca)}
            """
        let mqtt = try #require(try ConfigLoader.load(yaml: yaml).config.mqtt)
        #expect(mqtt.broker == MQTTBrokerURL(host: "broker.lan", port: 8883, usesTLS: true))
        #expect(mqtt.clientID == "gattway-shed")
        #expect(mqtt.password == .environment("GATTWAY_MQTT_PASSWORD"))
        #expect(mqtt.tls == MQTTTLSConfiguration(caFile: ca, certificateFile: nil, keyFile: nil))
        #expect(mqtt.baseTopic == "gattway" && mqtt.qos == 1 && mqtt.retain)
        #expect(mqtt.discoveryPrefix == "homeassistant" && mqtt.protocolVersion == .v5)
        #expect(mqtt.keepalive == .seconds(60) && mqtt.payload == .json && mqtt.outboxLimit == 10_000)
    }

    @Test func simulatedGenerators() throws {
        let yaml = """
            gpio:
              backend: simulated
              chips:
                - label: bench
                  lines:
                    - {name: A, generator: {type: constant, level: 1}}
                    - {name: B, generator: {type: square, period: 20ms, duty: 0.25}}
                    - {name: C, generator: {type: pulses, rate: 100}}
                    - {name: D, generator: {type: steps, steps: [{level: 1, duration: 1s}], repeat: false}}
                    - {name: E, generator: {type: dht11, humidity: 60}}
                    - {name: T}
                    - {name: F, generator: {type: hcsr04, distance: 0.5, trigger: T}}
                    - {name: G, generator: {type: socket, path: /run/gattway/door.socket}}
            """
        let chip = try ConfigLoader.load(yaml: yaml).config.gpio.simulatedChips[0]
        #expect(chip.name == "gpiochip0" && chip.label == "bench")
        #expect(
            chip.lines.map(\.generator) == [
                .constant(true), .square(period: .milliseconds(20), duty: 0.25),
                .pulses(perSecond: 100, width: .milliseconds(5)),
                .steps([.init(true, .seconds(1))], repeats: false),
                .dht11(humidity: 60, temperature: 21.5), nil, .hcsr04(trigger: "T", distanceMeters: 0.5),
                .socket(path: "/run/gattway/door.socket")
            ])
    }

    @Test(arguments: ["deploy/config/gattway.yaml", "deploy/config/demo.yaml"])
    func shippedConfigurationsAreValid(_ path: String) throws {
        let loaded = try ConfigLoader.load(file: Self.repositoryRoot.appendingPathComponent(path).path)
        #expect(!loaded.config.services.isEmpty)
        if path.hasSuffix("demo.yaml") {
            #expect(loaded.config.bluetooth.transport == .tcp(host: "127.0.0.1", port: 18820))
            #expect(loaded.config.gpio.backend == .simulated)
            // The demo's one open characteristic is intended; nothing else warns.
            #expect(loaded.warnings.count == 1)
        } else {
            #expect(loaded.warnings.isEmpty)
        }
    }

    @Test func theConfigurationDocsCarryTheGeneratedReferenceTable() throws {
        let docs = try String(contentsOf: Self.repositoryRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        #expect(
            docs.contains(ConfigReference.markdownTable()),
            "docs/configuration.md must hold `gattway config-reference`'s table as it is now")
    }
}

struct DurationTextTests {
    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)), ("2s", .seconds(2)), ("1m", .seconds(60)),
        ("1.5h", .seconds(5400)), ("250us", .microseconds(250)), ("7.5ms", .microseconds(7500))
    ])
    func parses(_ text: String, _ expected: Duration) {
        #expect(DurationText.parse(text) == expected)
    }

    @Test(arguments: ["", "100", "ms", "2 s", "-1s", "1.2.3s", "1d"])
    func rejects(_ text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test func formatsShortestForm() {
        #expect(DurationText.format(.milliseconds(500)) == "500ms")
        #expect(DurationText.format(.microseconds(7500)) == "7.5ms")
        #expect(DurationText.format(.milliseconds(10_240)) == "10.24s")
        #expect(DurationText.format(.seconds(120)) == "2m")
        #expect(DurationText.format(.zero) == "0s")
    }
}

struct MQTTBrokerURLTests {
    @Test func parsesSchemesAndPorts() throws {
        #expect(try MQTTBrokerURL(parsing: "mqtt://localhost") == MQTTBrokerURL(host: "localhost", port: 1883, usesTLS: false))
        #expect(try MQTTBrokerURL(parsing: "mqtts://b.lan:9883") == MQTTBrokerURL(host: "b.lan", port: 9883, usesTLS: true))
        #expect(try MQTTBrokerURL(parsing: "mqtt://[::1]:1884") == MQTTBrokerURL(host: "::1", port: 1884, usesTLS: false))
    }

    @Test(arguments: ["localhost:1883", "mqtt://", "mqtt://host:0", "mqtt://user:pw@host", "mqtt://host/path"])
    func rejects(_ text: String) {
        #expect(throws: MQTTBrokerURL.ParseError.self) { try MQTTBrokerURL(parsing: text) }
    }
}
