import ConfigReading
import GPIO
import Values

/// Button, door contact, PIR: 1 while active, kept active for `holdTime` after it last became active. With
/// `press`, each press too (the `press` reading).
public struct BinarySensorConfig: SensorKindConfig {
    public var input: InputLineConfig
    public var holdTime: Duration
    public var press: PressSettings?

    public init(input: InputLineConfig, holdTime: Duration, press: PressSettings?) {
        self.input = input
        self.holdTime = holdTime
        self.press = press
    }

    public var name: String { "binary" }
    public var readings: [SensorReading] { press == nil ? [.value] : [.value, .press] }
    public var lines: [LineReference] { [input.line] }
    public var isBinary: Bool { true }
    public var pressEvents: [PressEvent] { press?.events ?? [] }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] {
        press == nil ? [(.value, .genericBoolean)] : [(.value, .genericBoolean), (.press, .button)]
    }

    public func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        let settings = BinarySettings(line: line(input.line), bias: input.gpioBias, holdTime: holdTime, press: press)
        return (settings, input.lineFilters)
    }

    static let defaultHoldTime = Duration.zero

    static let definition = SensorKindDescription(
        name: "binary", settings: SensorSettingsReader.inputSettings + ["hold_time", "press"],
        reference: [
            .init(
                key: "hold_time", type: "duration", defaultValue: DurationText.format(defaultHoldTime),
                meaning: "an active state is reported inactive only once this long has passed since it last became active (a PIR's hold)."),
            .init(
                key: "press", type: "mapping", defaultValue: "no presses",
                meaning: "tell single, double and long presses apart, as the `press` reading "
                    + "(see [sensors](sensors.md#button-presses)); `press: {}` takes the defaults."),
            .init(
                key: "press.double_press_window", type: "duration 0s-2s",
                defaultValue: DurationText.format(PressSettings.defaultDoublePressWindow),
                meaning: "A second press this soon after a release is a double press; a single press is told "
                    + "this long after its release (0s: no double presses, single told at the release)."),
            .init(
                key: "press.long_press_time", type: "duration 100ms-10s",
                defaultValue: DurationText.format(PressSettings.defaultLongPressTime),
                meaning: "Held this long, a press is a long press (told at once); longer than `debounce`.")
        ],
        value: .binary,
        parse: { reader in
            let press = reader["press"].flatMap { parsePress($0, debounce: reader["debounce"]) }
            return reader.input("line").map {
                BinarySensorConfig(input: $0, holdTime: reader["hold_time"]?.duration() ?? defaultHoldTime, press: press)
            }
        })

    /// `press:`: a long press must outlast the debounce, or no press could be shorter than a
    /// long one.
    private static func parsePress(_ node: ConfigNode, debounce: ConfigNode?) -> PressSettings? {
        guard let m = node.mapping(keys: ["double_press_window", "long_press_time"]) else { return nil }
        let window =
            m["double_press_window"]?.duration(in: .zero...(.seconds(2))) ?? PressSettings.defaultDoublePressWindow
        let long =
            m["long_press_time"]?.duration(in: .milliseconds(100)...(.seconds(10))) ?? PressSettings.defaultLongPressTime
        if let node = debounce, let debounce = DurationText.parse(node.node.scalar ?? ""), long <= debounce {
            (m["long_press_time"] ?? node).report(
                "long_press_time (\(DurationText.format(long))) must be longer than debounce "
                    + "(\(DurationText.format(debounce))): every press would be a long one")
        }
        return PressSettings(doublePressWindow: window, longPressTime: long)
    }
}
