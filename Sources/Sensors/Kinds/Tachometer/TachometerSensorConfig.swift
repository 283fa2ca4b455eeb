import ConfigReading
import GPIO

/// A fan's or motor's speed in revolutions per minute from its tachometer wire, which pulses
/// `pulsesPerRevolution` times a turn (2 on a PC fan). Measured as the `rate` kind measures, in
/// pulses per minute divided by the pulses a turn: a stopped fan reads 0 once its window passes.
public struct TachometerSensorConfig: SensorKindConfig {
    public var input: InputLineConfig
    public var pulsesPerRevolution: Int
    public var window: Duration

    public init(input: InputLineConfig, pulsesPerRevolution: Int, window: Duration) {
        self.input = input
        self.pulsesPerRevolution = pulsesPerRevolution
        self.window = window
    }

    public var name: String { "tachometer" }
    public var lines: [LineReference] { [input.line] }

    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = RateSettings(
            line: line(input.line), bias: input.gpioBias, per: .minute, window: window,
            scale: 1 / Double(pulsesPerRevolution))
        return (settings, input.lineFilters)
    }

    /// What PC fans (the 4-pin PWM standard and 3-pin fans alike) give.
    static let defaultPulsesPerRevolution = 2
    static let defaultWindow = Duration.seconds(3)

    static let definition = SensorKindDescription(
        name: "tachometer", settings: SensorSettingsReader.inputSettings + ["pulses_per_revolution", "window"],
        reference: [
            .init(
                key: "pulses_per_revolution", type: "integer 1-100", defaultValue: String(defaultPulsesPerRevolution),
                meaning: "pulses the tachometer wire gives per turn (2 on a PC fan)."),
            .init(
                key: "window", type: "duration", defaultValue: DurationText.format(defaultWindow),
                meaning: "sliding window the rate is measured over.")
        ],
        value: .numeric,
        parse: { reader in
            reader.input("line").map {
                TachometerSensorConfig(
                    input: $0,
                    pulsesPerRevolution: reader["pulses_per_revolution"]?.integer(in: 1...100) ?? defaultPulsesPerRevolution,
                    window: reader["window"]?.duration(in: .milliseconds(10)...(.seconds(3600))) ?? defaultWindow)
            }
        })
}
