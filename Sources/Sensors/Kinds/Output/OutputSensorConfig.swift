import ConfigReading
import GPIO

/// A relay or LED, driven by BLE or MQTT writes.
public struct OutputSensorConfig: SensorKindConfig {
    public var line: LineReference
    public var activeLow: Bool
    public var initial: Bool

    public init(line: LineReference, activeLow: Bool, initial: Bool) {
        self.line = line
        self.activeLow = activeLow
        self.initial = initial
    }

    public var name: String { "output" }
    public var lines: [LineReference] { [line] }
    public var outputLines: [LineReference] { [line] }
    public var isOutput: Bool { true }

    public func sensorSettings(
        line resolve: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        (OutputSensorSettings(line: resolve(line), initialValue: initial), activeLow ? [.invert] : [])
    }

    static let defaultInitial = false

    static let definition = SensorKindDescription(
        name: "output", settings: ["line", "active_low", "initial"],
        reference: [
            .init(
                key: "initial", type: "bool", defaultValue: String(defaultInitial),
                meaning: "level driven at start.")
        ],
        value: .driven,
        parse: { reader in
            reader.line("line").map {
                OutputSensorConfig(
                    line: $0, activeLow: reader["active_low"]?.bool() ?? InputLineConfig.defaultActiveLow,
                    initial: reader["initial"]?.bool() ?? defaultInitial)
            }
        })
}
