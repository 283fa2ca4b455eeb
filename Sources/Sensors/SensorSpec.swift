import GPIO

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

public struct BinarySettings: Sendable, Equatable {
    public var line: LineSelector
    public var bias: GPIOBias
    /// An active state is reported inactive only once `holdTime` has passed since it last became
    /// active (a PIR's "motion" stays on for a while). Zero reports every change at once.
    public var holdTime: Duration

    public init(line: LineSelector, bias: GPIOBias = .asIs, holdTime: Duration = .zero) {
        self.line = line
        self.bias = bias
        self.holdTime = holdTime
    }
}

public struct CounterSettings: Sendable, Equatable {
    public var line: LineSelector
    public var bias: GPIOBias
    /// Where `<name>.count` keeps the total across restarts; nil keeps it in memory only.
    public var stateDirectory: String?
    /// The total is reported at most this often (and whenever it changes after a quiet spell).
    public var reportInterval: Duration
    /// The total is written to disk at most this often, and when the sensor stops.
    public var persistInterval: Duration

    public init(
        line: LineSelector, bias: GPIOBias = .asIs, stateDirectory: String? = nil,
        reportInterval: Duration = .seconds(1), persistInterval: Duration = .seconds(10)
    ) {
        self.line = line
        self.bias = bias
        self.stateDirectory = stateDirectory
        self.reportInterval = reportInterval
        self.persistInterval = persistInterval
    }
}

public struct RateSettings: Sendable, Equatable {
    public enum Per: String, Sendable, Equatable { case second, minute }

    public var line: LineSelector
    public var bias: GPIOBias
    public var per: Per
    /// The sliding window the rate is measured over.
    public var window: Duration
    /// Multiplies the pulse rate (e.g. litres per pulse).
    public var scale: Double
    public var reportInterval: Duration

    public init(
        line: LineSelector, bias: GPIOBias = .asIs, per: Per = .second,
        window: Duration = .seconds(10), scale: Double = 1, reportInterval: Duration = .seconds(1)
    ) {
        self.line = line
        self.bias = bias
        self.per = per
        self.window = window
        self.scale = scale
        self.reportInterval = reportInterval
    }
}

public struct PulseWidthSettings: Sendable, Equatable {
    public var line: LineSelector
    public var bias: GPIOBias
    /// Averages of the cycles completed in each interval are reported.
    public var reportInterval: Duration

    public init(line: LineSelector, bias: GPIOBias = .asIs, reportInterval: Duration = .seconds(1)) {
        self.line = line
        self.bias = bias
        self.reportInterval = reportInterval
    }
}

public struct DistanceSettings: Sendable, Equatable {
    public var trigger: LineSelector
    public var echo: LineSelector
    /// Time between measurements (at least 60 ms, the HC-SR04's cycle).
    public var interval: Duration
    /// How long to wait for the echo to end before reporting a timeout.
    public var timeout: Duration
    /// Speed of sound in m/s.
    public var speedOfSound: Double

    public init(
        trigger: LineSelector, echo: LineSelector, interval: Duration = .seconds(1),
        timeout: Duration = .milliseconds(40), speedOfSound: Double = 343
    ) {
        self.trigger = trigger
        self.echo = echo
        self.interval = interval
        self.timeout = timeout
        self.speedOfSound = speedOfSound
    }
}

public struct DHTSettings: Sendable, Equatable {
    public enum Model: String, Sendable, Equatable { case dht22, dht11 }

    public var model: Model
    public var line: LineSelector
    /// Time between reads; never less than 2 s, the sensor's own limit.
    public var interval: Duration

    public init(model: Model, line: LineSelector, interval: Duration = .seconds(10)) {
        self.model = model
        self.line = line
        self.interval = interval
    }
}

public struct RotaryEncoderSettings: Sendable, Equatable {
    public var a: LineSelector
    public var b: LineSelector
    public var bias: GPIOBias
    /// Quadrature transitions per reported step (4 for the usual detented encoders).
    public var transitionsPerStep: Int
    /// When set, the position wraps around within this range.
    public var wrap: ClosedRange<Int>?

    public init(
        a: LineSelector, b: LineSelector, bias: GPIOBias = .pullUp, transitionsPerStep: Int = 4,
        wrap: ClosedRange<Int>? = nil
    ) {
        self.a = a
        self.b = b
        self.bias = bias
        self.transitionsPerStep = transitionsPerStep
        self.wrap = wrap
    }
}

public struct OutputSensorSettings: Sendable, Equatable {
    public var line: LineSelector
    public var initialValue: Bool

    public init(line: LineSelector, initialValue: Bool = false) {
        self.line = line
        self.initialValue = initialValue
    }
}

/// Per-sensor filters.
public enum SensorFilter: Sendable, Equatable {
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
