import ConfigReading
import GPIO

/// Pulses per second or minute over a sliding `window`, multiplied by `scale`.
public struct RateSensorConfig: SensorKindConfig {
    public var input: InputLineConfig
    public var window: Duration
    public var per: RateSettings.Per
    public var scale: Double

    public init(input: InputLineConfig, window: Duration, per: RateSettings.Per, scale: Double) {
        self.input = input
        self.window = window
        self.per = per
        self.scale = scale
    }

    public var name: String { "rate" }
    public var lines: [LineReference] { [input.line] }

    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = RateSettings(line: line(input.line), bias: input.gpioBias, per: per, window: window, scale: scale)
        return (settings, input.lineFilters)
    }

    static let defaultWindow = Duration.seconds(10)
    static let defaultPer = RateSettings.Per.second
    static let defaultScale = 1.0

    static let definition = SensorKindDescription(
        name: "rate", settings: SensorSettingsReader.inputSettings + ["window", "per", "scale"],
        reference: [
            .init(
                key: "window", type: "duration", defaultValue: DurationText.format(defaultWindow),
                meaning: "sliding window the rate is measured over."),
            .init(
                key: "per", type: "enum", defaultValue: defaultPer.rawValue,
                meaning: "pulses per `second` or `minute`."),
            .init(
                key: "scale", type: "number", defaultValue: ConfigNode.formatNumber(defaultScale),
                meaning: "multiplier from pulses per unit to the value (e.g. L/min per Hz).")
        ],
        value: .numeric,
        parse: { reader in
            reader.input("line").map {
                RateSensorConfig(
                    input: $0,
                    window: reader["window"]?.duration(in: .milliseconds(10)...(.seconds(3600))) ?? defaultWindow,
                    per: reader["per"]?.choice(RateSettings.Per.self) ?? defaultPer,
                    scale: reader["scale"]?.number() ?? defaultScale)
            }
        })
}
