import ConfigReading
import GPIO

/// High time and duty cycle, averaged over `window`.
public struct PulseWidthSensorConfig: SensorKindConfig {
    public var input: InputLineConfig
    public var window: Duration

    public init(input: InputLineConfig, window: Duration) {
        self.input = input
        self.window = window
    }

    public var name: String { "pulse_width" }
    public var readings: [SensorReading] { [.dutyCycle, .highTime] }
    public var lines: [LineReference] { [input.line] }

    /// `window` is the Sensors layer's report interval.
    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = PulseWidthSettings(line: line(input.line), bias: input.gpioBias, reportInterval: window)
        return (settings, input.lineFilters)
    }

    static let defaultWindow = Duration.seconds(1)

    static let definition = SensorKindDescription(
        name: "pulse_width", settings: SensorSettingsReader.inputSettings + ["window"],
        reference: [
            .init(
                key: "window", type: "duration", defaultValue: DurationText.format(defaultWindow),
                meaning: "averaging period.")
        ],
        value: .numeric,
        parse: { reader in
            reader.input("line").map {
                PulseWidthSensorConfig(
                    input: $0,
                    window: reader["window"]?.duration(in: .milliseconds(10)...(.seconds(3600))) ?? defaultWindow)
            }
        })
}
