import Sensors

public struct SensorConfig: Sendable, Hashable {
    /// Unique; characteristics name it in `source: {sensor: id}`.
    public var id: String
    /// What it measures, with its kind's settings (one type per kind, `Kinds/`).
    public var kind: any SensorKindConfig
    /// Applied in order to the sensor's value.
    public var filters: [SensorFilter]
    /// Also broadcast the sensor's readings as BTHome v2 service data (UUID 0xFCD2).
    public var bthome: Bool

    public init(id: String, kind: any SensorKindConfig, filters: [SensorFilter], bthome: Bool) {
        self.id = id
        self.kind = kind
        self.filters = filters
        self.bthome = bthome
    }

    public static func == (lhs: SensorConfig, rhs: SensorConfig) -> Bool {
        lhs.id == rhs.id && AnyHashable(lhs.kind) == AnyHashable(rhs.kind) && lhs.filters == rhs.filters
            && lhs.bthome == rhs.bthome
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(AnyHashable(kind))
        hasher.combine(filters)
        hasher.combine(bthome)
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
