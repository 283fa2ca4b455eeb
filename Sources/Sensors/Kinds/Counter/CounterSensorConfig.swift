import ConfigReading
import GPIO
import Values

/// Counts pulses; the total persists in the state directory, saved before it is reported.
public struct CounterSensorConfig: SensorKindConfig {
    public var input: InputLineConfig
    public var reportInterval: Duration

    public init(input: InputLineConfig, reportInterval: Duration = defaultReportInterval) {
        self.input = input
        self.reportInterval = reportInterval
    }

    public var name: String { "counter" }
    public var lines: [LineReference] { [input.line] }
    public var isTotal: Bool { true }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] { [(.value, .count32)] }

    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = CounterSettings(
            line: line(input.line), bias: input.gpioBias, stateDirectory: stateDirectory, reportInterval: reportInterval)
        return (settings, input.lineFilters)
    }

    public static let defaultReportInterval = Duration.seconds(1)

    static let definition = SensorKindDescription(
        name: "counter", settings: SensorSettingsReader.inputSettings + ["report_interval"],
        reference: [
            .init(
                key: "report_interval", type: "duration 100ms-1h", defaultValue: DurationText.format(defaultReportInterval),
                meaning: "the total is saved to `<state_dir>/<id>.count`, then reported, at most this often "
                    + "(at once on the first pulse after a quiet spell): one write per interval while pulses come.")
        ],
        value: .numeric,
        parse: { reader in
            reader.input("line").map {
                CounterSensorConfig(
                    input: $0,
                    reportInterval: reader["report_interval"]?.duration(in: .milliseconds(100)...(.seconds(3600)))
                        ?? defaultReportInterval)
            }
        })
}
