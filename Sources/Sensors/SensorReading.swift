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
