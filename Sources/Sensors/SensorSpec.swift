/// One configured sensor: plain values the configuration layer maps its YAML onto.
public struct SensorSpec: Sendable, Equatable {
    /// Unique name; also the file name of persisted state.
    public var name: String
    public var kind: SensorKind
    /// Applied in order. `debounce` and `invert` act on the GPIO line itself (kernel debounce on
    /// libgpiod v2, software elsewhere; active-low); the others transform the values.
    public var filters: [SensorFilter]
    /// Overrides the unit of the `value` channel (e.g. `l/min` for a scaled flow meter).
    public var unit: String?
    /// Edge events buffered per input line (the kernel's buffer on libgpiod v2), when more than
    /// the kind's default is needed for fast signals; 0 keeps the default.
    public var eventBufferSize: Int

    public init(
        name: String, kind: SensorKind, filters: [SensorFilter] = [], unit: String? = nil,
        eventBufferSize: Int = 0
    ) {
        self.name = name
        self.kind = kind
        self.filters = filters
        self.unit = unit
        self.eventBufferSize = eventBufferSize
    }
}

public enum SensorKind: Sendable, Equatable {
    /// Button, door contact, PIR: `value` is the line's state.
    case binary(BinarySettings)
    /// Pulses counted; the total survives restarts.
    case counter(CounterSettings)
    /// Pulses per second or minute over a sliding window, scaled.
    case rate(RateSettings)
    /// High time (s) and duty cycle (%) of a pulse train.
    case pulseWidth(PulseWidthSettings)
    /// HC-SR04 ultrasonic distance (m).
    case distance(DistanceSettings)
    /// DHT22 / DHT11 temperature (°C) and humidity (%).
    case dht(DHTSettings)
    /// Quadrature rotary encoder: position in steps.
    case rotaryEncoder(RotaryEncoderSettings)
    /// A relay or LED driven by writes; `value` is the driven state.
    case output(OutputSensorSettings)
}

/// Per-sensor filters.
public enum SensorFilter: Sendable, Hashable {
    /// Ignore contact bounce shorter than this (on the line: kernel or software debounce).
    case debounce(Duration)
    /// Swap high and low (on the line: active-low).
    case invert
    /// Report `true` only once it has held for this long.
    case delayedOn(Duration)
    /// Report `false` only once it has held for this long.
    case delayedOff(Duration)
    /// Report the mean of the last N numbers.
    case movingAverage(Int)
    /// Add to numbers.
    case offset(Double)
    /// Multiply numbers.
    case scale(Double)
}
