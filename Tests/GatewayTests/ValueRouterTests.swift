import Config
import Notify
import Testing
import Values

@testable import Gateway

/// The pipeline's first stage on its own: which characteristics carry a reading, and the bytes a
/// value becomes in each one's format.
struct ValueRouterTests {
    static let yaml = """
        device: {name: router}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DHT
                - name: RELAY
        sensors:
          - {id: climate, kind: dht22, line: DHT}
          - {id: relay, kind: output, line: RELAY}
        services:
          - uuid: 181A
            name: environment
            characteristics:
              - {uuid: 2A6E, name: temperature, source: {sensor: climate, reading: temperature}}
              - {uuid: 2A6F, name: humidity, source: {sensor: climate, reading: humidity}}
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - {uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001, name: copy, format: sint16, exponent: -2, source: {sensor: climate, reading: temperature}}
              - {uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0001, name: relay, format: bool, source: {sensor: relay}, permissions: {write: open}}
              - {uuid: 6E400004-B5A3-F393-E0A9-E50E24DC0001, name: level, format: uint8, source: {static: 7}}
              - {uuid: 6E400005-B5A3-F393-E0A9-E50E24DC0001, name: label, format: utf8, properties: [read, write], source: {written: "hi"}, permissions: {write: open}}
              - {uuid: 6E400006-B5A3-F393-E0A9-E50E24DC0001, name: remote, format: uint8, source: {mqtt: some/topic}}
        mqtt: {url: "mqtt://127.0.0.1:1883"}
        """

    let layout: GATTLayout
    let router: ValueRouter

    init() throws {
        layout = GATTLayout(config: try ConfigLoader.load(yaml: Self.yaml).config)
        router = ValueRouter(layout: layout)
    }

    func ref(_ path: String) -> CharacteristicRef { layout.ref(path)! }

    /// A reading goes to every characteristic carrying its sensor's channel, in configuration
    /// order, and to no other; an unknown sensor or channel goes nowhere.
    @Test func readingsGoToTheCharacteristicsCarryingThem() {
        #expect(
            router.characteristics(carrying: "climate", channel: "temperature")
                == [ref("environment/temperature"), ref("gateway/copy")])
        #expect(router.characteristics(carrying: "climate", channel: "humidity") == [ref("environment/humidity")])
        #expect(router.characteristics(carrying: "relay", channel: "value") == [ref("gateway/relay")])
        #expect(router.characteristics(carrying: "climate", channel: "value") == nil)
        #expect(router.characteristics(carrying: "door", channel: "value") == nil)
    }

    @Test func valuesAreEncodedInTheCharacteristicsFormat() throws {
        let temperature = try #require(try sample(.number(21.5), for: ref("environment/temperature")))
        #expect(temperature.bytes == [0x66, 0x08])
        #expect(temperature.value == .number(21.5))
        // A boolean on a numeric characteristic is 0 or 1; a number on a boolean one is non-zero.
        #expect(try sample(.bool(true), for: ref("gateway/copy"))?.bytes == [0x64, 0x00])
        #expect(try sample(.number(3), for: ref("gateway/relay"))?.bytes == [0x01])
        #expect(try sample(.number(0), for: ref("gateway/relay"))?.bytes == [0x00])
        #expect(throws: ValueError.self) { try sample(.number(400), for: ref("environment/temperature")) }
        let unknown = CharacteristicRef(service: 9, characteristic: 0, path: "none/none")
        #expect(try sample(.number(1), for: unknown) == nil)
    }

    /// `value` as `ref` carries it, as the pipeline encodes it.
    private func sample(_ value: SensorValue, for ref: CharacteristicRef) throws -> NotifySample? {
        try router.encoding(of: ref).map { encoding throws in try ValueRouter.sample(value, encoding: encoding) }
    }

    /// Fixed and written values are the configuration's, encoded; sensor and MQTT sources have none
    /// until a value comes.
    @Test func configuredValuesAreEncodedOnce() {
        #expect(
            router.configuredSamples == [
                ref("gateway/level"): NotifySample(value: .number(7), bytes: [7]),
                ref("gateway/label"): NotifySample(value: .text("hi"), bytes: Array("hi".utf8))
            ])
    }

    @Test func outputsAreTheirSensorsAndTakeBooleans() {
        #expect(router.outputSensor(of: ref("gateway/relay")) == "relay")
        #expect(router.outputSensor(of: ref("environment/temperature")) == nil)
        #expect(ValueRouter.outputLevel(.bool(true)) == true)
        #expect(ValueRouter.outputLevel(.number(0)) == false)
        #expect(ValueRouter.outputLevel(.number(2)) == true)
        #expect(ValueRouter.outputLevel(.text("on")) == nil)
    }
}
