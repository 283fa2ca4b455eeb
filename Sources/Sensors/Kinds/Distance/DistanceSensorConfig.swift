import ConfigReading
import GPIO
import Values

/// HC-SR04: a pulse on `trigger`, distance in metres from the echo's high time.
public struct DistanceSensorConfig: SensorKindConfig {
    public var trigger: LineReference
    public var echo: InputLineConfig
    public var interval: Duration
    public var timeout: Duration

    public init(trigger: LineReference, echo: InputLineConfig, interval: Duration, timeout: Duration) {
        self.trigger = trigger
        self.echo = echo
        self.interval = interval
        self.timeout = timeout
    }

    public var name: String { "distance" }
    public var lines: [LineReference] { [trigger, echo.line] }
    public var outputLines: [LineReference] { [trigger] }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] { [(.value, .distance)] }

    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = DistanceSettings(
            trigger: line(trigger), echo: line(echo.line), interval: interval, timeout: timeout)
        return (settings, echo.lineFilters)
    }

    static let defaultInterval = Duration.seconds(1)
    static let defaultTimeout = Duration.milliseconds(40)

    static let definition = SensorKindDescription(
        name: "distance", settings: ["trigger", "echo", "bias", "interval", "timeout"],
        reference: [
            .init(
                key: "trigger", type: "line name", defaultValue: SensorKindDescription.Setting.required,
                meaning: "HC-SR04 trigger (output) line."),
            .init(
                key: "echo", type: "line name", defaultValue: SensorKindDescription.Setting.required,
                meaning: "HC-SR04 echo (input) line."),
            .init(
                key: "interval", type: "duration", defaultValue: DurationText.format(defaultInterval),
                meaning: "time between measurements (at least 60ms, the HC-SR04's cycle)."),
            .init(
                key: "timeout", type: "duration", defaultValue: DurationText.format(defaultTimeout),
                meaning: "echo wait before reporting a timeout.")
        ],
        value: .numeric,
        parse: { reader in
            let trigger = reader.line("trigger")
            let echo = reader.input("echo")
            let interval =
                reader["interval"]?.duration(in: .milliseconds(60)...(.seconds(3600))) ?? defaultInterval
            let timeout = reader["timeout"]?.duration(in: .milliseconds(1)...(.seconds(1))) ?? defaultTimeout
            guard let trigger, let echo else { return nil }
            return DistanceSensorConfig(trigger: trigger, echo: echo, interval: interval, timeout: timeout)
        })
}
