import Config
import GPIO
import Sensors
import StateFile
import Testing

@testable import Gateway

/// Configuration → GPIO and Sensors: the specs the sensor layer gets, and the demo's simulated
/// sensors actually producing values through the mapping.
struct SensorMappingTests {
    static let yaml = """
        device: {name: mapping}
        gpio:
          backend: simulated
          chips:
            - name: gpiochip4
              label: board
              lines:
                - name: BTN
                  generator:
                    type: steps
                    steps: [{level: 1, duration: 1s}, {level: 0, duration: 1s}]
                - name: A
                - name: B
                - name: RELAY
        sensors:
          - id: button
            kind: binary
            line: BTN
            chip: gpiochip4
            bias: pull_up
            active_low: true
            debounce: 5ms
            filters: [{delay_on: 20ms}]
          - id: knob
            kind: rotary_encoder
            a: A
            b: B
            wrap: 24
            transitions_per_step: 2
          - id: relay
            kind: output
            line: RELAY
            chip: /dev/gpiochip4
            active_low: true
            initial: true
        """

    private func loaded() throws -> GatewayConfig {
        try ConfigLoader.load(yaml: Self.yaml).config
    }

    @Test func inputSettingsBecomeLineFiltersAndChipNamesBecomeLabels() throws {
        let config = try loaded()
        let spec = SensorMapping.spec(config.sensors[0], gpio: config.gpio, stateDirectory: "/tmp/x")
        #expect(
            spec
                == SensorSpec(
                    name: "button",
                    kind: BinarySettings(line: LineSelector("BTN", chip: "board"), bias: .pullUp, holdTime: .zero),
                    filters: [.invert, .debounce(.milliseconds(5)), .delayedOn(.milliseconds(20))]))
    }

    @Test func rotaryWrapIsARangeAndOutputsKeepActiveLow() throws {
        let config = try loaded()
        let knob = SensorMapping.spec(config.sensors[1], gpio: config.gpio, stateDirectory: "/tmp/x")
        #expect(
            knob.kind as? RotaryEncoderSettings
                == RotaryEncoderSettings(
                    a: LineSelector("A"), b: LineSelector("B"), bias: .asIs, transitionsPerStep: 2, wrap: 0...23))
        let relay = SensorMapping.spec(config.sensors[2], gpio: config.gpio, stateDirectory: "/tmp/x")
        #expect(relay.kind as? OutputSensorSettings == OutputSensorSettings(line: LineSelector("RELAY", chip: "board"), initialValue: true))
        #expect(relay.filters == [.invert])
    }

    @Test func realChipReferencesStayAsWritten() {
        let gpio = GPIOConfig(backend: .libgpiod, simulatedChips: [])
        #expect(SensorMapping.chipName("gpiochip0", gpio: gpio) == "gpiochip0")
    }

    @Test func simulatedChipsCarryTheirGenerators() throws {
        let chips = SensorMapping.simulatedChips(try loaded().gpio)
        #expect(chips.map(\.label) == ["board"])
        #expect(chips[0].lines.map(\.name) == ["BTN", "A", "B", "RELAY"])
        #expect(chips[0].lines[0].generator == .steps([.init(true, .seconds(1)), .init(false, .seconds(1))], repeats: true))
        #expect(chips[0].lines[1].generator == nil)
    }

    /// The button is active-low with a pull-up: the generator's high second reads 0, its low
    /// second reads 1 (after the 20 ms delay-on); the relay drives its line low for "on".
    @Test func mappedSensorsRunOnTheSimulator() throws {
        let config = try loaded()
        let backend = SimulatedBackend(chips: SensorMapping.simulatedChips(config.gpio), clock: .virtual)
        let specs = config.sensors.map { SensorMapping.spec($0, gpio: config.gpio, stateDirectory: "/tmp/x") }
        let driver = try SimulatedSensorDriver(backend: backend, sensors: specs, stateWriter: StateFileWriter())
        defer { driver.stop() }
        let initial = try driver.start()
        #expect(initial.contains { $0.sensor == "relay" && $0.bool == true })
        #expect(try backend.level(of: LineSelector("RELAY")) == false)
        let values = driver.run(for: .milliseconds(2500)).filter { $0.sensor == "button" && $0.channel == "value" }
        #expect(values.map(\.bool) == [true, false])
        _ = try driver.write("relay", false)
        #expect(try backend.level(of: LineSelector("RELAY")) == true)
    }

    /// Every sensor of the shipped demo maps onto a spec the simulator accepts and produces values.
    @Test func demoConfigurationSensorsAllProduceValues() throws {
        let config = try ConfigLoader.load(file: "deploy/config/demo.yaml").config
        let backend = SimulatedBackend(chips: SensorMapping.simulatedChips(config.gpio), clock: .virtual)
        let specs = config.sensors.map { SensorMapping.spec($0, gpio: config.gpio, stateDirectory: "/tmp/x") }
        let driver = try SimulatedSensorDriver(backend: backend, sensors: specs, stateWriter: StateFileWriter())
        defer { driver.stop() }
        let values = try driver.start() + driver.run(for: .seconds(5))
        let produced = Set(values.filter { $0.number != nil || $0.bool != nil }.map(\.sensor))
        #expect(produced == Set(config.sensors.map(\.id)))
        let temperature = values.last { $0.sensor == "climate" && $0.channel == "temperature" }?.number
        #expect(temperature.map { abs($0 - 22.4) < 0.05 } == true)
    }
}
