import Config
import GPIO
import StateFile
import Testing

@testable import Sensors

/// `kind: tachometer` from the file to the value: a fan's tach wire pulsing on a simulated line
/// reads as revolutions per minute, and its mistakes are reported with path and line.
struct TachometerTests {
    static let start: UInt64 = 1_000_000_000

    static func yaml(_ settings: String) -> String {
        """
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: FAN_TACH
        sensors:
          - id: fan
            kind: tachometer
            line: FAN_TACH
            bias: pull_up
            \(settings)
        """
    }

    /// The sensor the file describes, run against a tach wire pulsing `hertz` times a second;
    /// its values from `from` on.
    private func readings(_ settings: String, hertz: Double, from: Duration = .seconds(4)) throws -> [Double] {
        let sensor = try ConfigLoader.load(yaml: Self.yaml(settings)).config.sensors[0]
        let (kind, lineFilters) = sensor.kind.sensorSettings(line: { LineSelector($0.name) }, stateDirectory: "/nonexistent")
        let line = SimulatedLineConfig(name: "FAN_TACH", generator: .pulses(perSecond: hertz, width: .microseconds(500)))
        let sim = SimulatedBackend(chips: [SimulatedChipConfig(label: "fan", lines: [line])], startNs: Self.start)
        let driver = try SimulatedSensorDriver(
            backend: sim, sensors: [SensorSpec(name: sensor.id, kind: kind, filters: lineFilters)],
            stateWriter: StateFileWriter(), maxStep: .milliseconds(10))
        _ = try driver.start()
        return driver.run(for: .seconds(8)).filter { $0.timestampNs >= Self.start + UInt64(from.nanoseconds) }
            .compactMap(\.number)
    }

    /// A PC fan at 1200 rpm pulses 40 times a second (two pulses a turn).
    @Test func aPCFanAt1200RPMReads1200() throws {
        let rpm = try readings("", hertz: 40)
        #expect(!rpm.isEmpty)
        for value in rpm { #expect(abs(value - 1200) < 12, "\(value)") }
    }

    @Test func pulsesPerRevolutionDividesThePulseRate() throws {
        let rpm = try readings("pulses_per_revolution: 4\n    window: 1s", hertz: 40, from: .seconds(2))
        #expect(!rpm.isEmpty)
        for value in rpm { #expect(abs(value - 600) < 6, "\(value)") }
    }

    @Test(arguments: [
        ("pulses_per_revolution: 0", "sensors[0].pulses_per_revolution (line 11): 0 is out of range (1-100)"),
        ("pulses_per_revolutoin: 2", "sensors[0].pulses_per_revolutoin (line 11): unknown key; did you mean \"pulses_per_revolution\"?"),
        ("window: 5ms", "sensors[0].window (line 11): 5ms is out of range (10ms-1h)")
    ])
    func mistakesAreReportedWithPathAndLine(settings: String, expected: String) {
        do {
            _ = try ConfigLoader.load(yaml: Self.yaml(settings))
            Issue.record("accepted \(settings)")
        } catch {
            #expect(error.errors.map(\.description) == [expected])
        }
    }
}
