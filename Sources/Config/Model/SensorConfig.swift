import Sensors

public struct SensorConfig: Sendable, Hashable {
    /// Unique; characteristics name it in `source: {sensor: id}`.
    public var id: String
    public var kind: SensorKindConfig
    /// Applied in order to the sensor's value.
    public var filters: [SensorFilter]
    /// Also broadcast the sensor's readings as BTHome v2 service data (UUID 0xFCD2).
    public var bthome: Bool

    public init(id: String, kind: SensorKindConfig, filters: [SensorFilter], bthome: Bool) {
        self.id = id
        self.kind = kind
        self.filters = filters
        self.bthome = bthome
    }
}

/// A GPIO line found by name, optionally on a particular chip (label such as `pinctrl-bcm2711`,
/// name such as `gpiochip0`, or path such as `/dev/gpiochip0`).
public struct LineReference: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var chip: String?

    public init(name: String, chip: String?) {
        self.name = name
        self.chip = chip
    }

    public var description: String { chip.map { "\($0)/\(name)" } ?? name }
}

/// How an input line is requested.
public struct InputLineConfig: Sendable, Hashable {
    public var line: LineReference
    public var bias: LineBias
    public var activeLow: Bool
    /// Debounce period; zero for none.
    public var debounce: Duration

    public init(line: LineReference, bias: LineBias, activeLow: Bool, debounce: Duration) {
        self.line = line
        self.bias = bias
        self.activeLow = activeLow
        self.debounce = debounce
    }
}

public enum LineBias: String, Sendable, Hashable, CaseIterable {
    case asIs = "as_is"
    case disabled
    case pullUp = "pull_up"
    case pullDown = "pull_down"
}

/// What a sensor measures, with its kind-specific settings.
public enum SensorKindConfig: Sendable, Hashable {
    /// Button, door contact, PIR: 1 while active. A change must last `holdTime` to count. With
    /// `press`, each press too (the `press` reading).
    case binary(InputLineConfig, holdTime: Duration, press: PressSettings?)
    /// Counts pulses; the total persists in the state directory.
    case counter(InputLineConfig)
    /// Pulses per second or minute over a sliding `window`, multiplied by `scale`.
    case rate(InputLineConfig, window: Duration, per: RateSettings.Per, scale: Double)
    /// High time and duty cycle, averaged over `window`.
    case pulseWidth(InputLineConfig, window: Duration)
    /// HC-SR04: a pulse on `trigger`, distance in metres from the echo's high time.
    case distance(trigger: LineReference, echo: InputLineConfig, interval: Duration, timeout: Duration)
    /// DHT22 / DHT11 temperature (°C) and humidity (%), read every `interval`.
    case dht(DHTSettings.Model, line: LineReference, interval: Duration)
    /// Quadrature encoder: one step per `transitionsPerStep` quadrature transitions; steps wrap
    /// into 0..<wrap when set.
    case rotaryEncoder(a: InputLineConfig, b: InputLineConfig, transitionsPerStep: Int, wrap: Int?)
    /// A relay or LED, driven by BLE or MQTT writes.
    case output(line: LineReference, activeLow: Bool, initial: Bool)

    public var name: String {
        switch self {
        case .binary: "binary"
        case .counter: "counter"
        case .rate: "rate"
        case .pulseWidth: "pulse_width"
        case .distance: "distance"
        case .dht(let model, _, _): model.rawValue
        case .rotaryEncoder: "rotary_encoder"
        case .output: "output"
        }
    }

    public var isOutput: Bool {
        if case .output = self { return true }
        return false
    }

    /// The values the sensor produces; the first is the one a characteristic gets by default.
    public var readings: [SensorReading] {
        switch self {
        case .dht: [.temperature, .humidity]
        case .pulseWidth: [.dutyCycle, .highTime]
        case .binary(_, _, .some): [.value, .press]
        default: [.value]
        }
    }

    /// Every line the sensor uses.
    public var lines: [LineReference] {
        switch self {
        case .binary(let input, _, _), .counter(let input), .rate(let input, _, _, _), .pulseWidth(let input, _):
            [input.line]
        case .distance(let trigger, let echo, _, _): [trigger, echo.line]
        case .dht(_, let line, _), .output(let line, _, _): [line]
        case .rotaryEncoder(let a, let b, _, _): [a.line, b.line]
        }
    }
}

/// Which of a sensor's values a characteristic carries.
public enum SensorReading: String, Sendable, Hashable, CaseIterable {
    /// The only value of single-valued kinds (binary 0/1, count, rate, metres, steps, output state).
    case value
    /// `dht22`/`dht11`, °C.
    case temperature
    /// `dht22`/`dht11`, % relative humidity.
    case humidity
    /// `pulse_width`, percent of the period spent high.
    case dutyCycle = "duty_cycle"
    /// `pulse_width`, seconds.
    case highTime = "high_time"
    /// A `binary` sensor with `press` settings: one value per press, its `PressEvent` code
    /// (1 single, 2 double, 4 long).
    case press

    /// Each value is a momentary event, not a state: sent once, never repeated (no heartbeat,
    /// not re-sent to a central that subscribes, not retained on MQTT).
    public var isEvent: Bool { self == .press }
}
