import GPIO
import Sensors
import Values

/// Counts pulses; the total persists in the state directory.
public struct CounterSensorConfig: SensorKindConfig {
    public var input: InputLineConfig

    public init(input: InputLineConfig) { self.input = input }

    public var name: String { "counter" }
    public var lines: [LineReference] { [input.line] }
    public var isTotal: Bool { true }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] { [(.value, .count32)] }

    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = CounterSettings(line: line(input.line), bias: input.gpioBias, stateDirectory: stateDirectory)
        return (settings, input.lineFilters)
    }

    static let definition = SensorKindDescription(
        name: "counter", settings: SensorSettingsReader.inputSettings, reference: [], value: .numeric,
        parse: { reader in reader.input("line").map(CounterSensorConfig.init) })
}
