/// Configuration of the simulator: plain values the configuration layer maps its YAML onto.

/// A simulated chip with named lines.
public struct SimulatedChipConfig: Sendable, Equatable {
    /// Chip label, e.g. `gattway-demo`; the chip's path is `sim:<label>`.
    public var label: String
    /// Lines in offset order.
    public var lines: [SimulatedLineConfig]

    public init(label: String, lines: [SimulatedLineConfig]) {
        self.label = label
        self.lines = lines
    }
}

/// One simulated line: its name and what drives its level when gattway does not drive it as an
/// output. A line without a generator floats and follows the bias of the request (low otherwise).
public struct SimulatedLineConfig: Sendable, Equatable {
    public var name: String
    public var generator: SignalGenerator?

    public init(name: String, generator: SignalGenerator? = nil) {
        self.name = name
        self.generator = generator
    }
}

/// What drives a simulated input line. Levels are physical (before active-low). Periodic
/// generators start at the simulator's start time.
public enum SignalGenerator: Sendable, Hashable {
    /// A fixed level.
    case constant(Bool)
    /// High for `duty` (0...1) of every `period`, starting high.
    case square(period: Duration, duty: Double)
    /// `perSecond` high pulses of `width` each (flow meters, anemometers, rain gauges).
    case pulses(perSecond: Double, width: Duration)
    /// Levels held for given durations, in order; `repeats` loops the list, otherwise the last
    /// level stays. Also builds quadrature encoder phases and bouncing contacts.
    case steps([Step], repeats: Bool)
    /// A DHT22 (AM2302) on a single-wire line: answers each start signal (the host driving the
    /// line low for at least 1 ms, then releasing it) with a 40-bit frame of these readings.
    /// `corruptChecksum` sends a wrong checksum byte; during `silence` it answers nothing.
    case dht22(humidity: Double, temperature: Double, corruptChecksum: Bool = false, silence: Silence? = nil)
    /// A DHT11 (start signal at least 18 ms), integer and tenth parts as the DHT11 sends them.
    case dht11(humidity: Double, temperature: Double, corruptChecksum: Bool = false, silence: Silence? = nil)
    /// The echo line of an HC-SR04 whose trigger is the line named `trigger` on the same chip:
    /// after each trigger pulse (high for at least 10 µs) the echo goes high 250 µs later for the
    /// round trip time of sound (343 m/s) over `distanceMeters`. Beyond 4 m there is no echo,
    /// so the reader's timeout path runs.
    case hcsr04(trigger: String, distanceMeters: Double)
    /// Levels sent by another program: while an input holds the line, the simulator binds a
    /// Unix datagram socket at `path`, and each datagram's bytes `0` and `1` are levels applied in
    /// order when it arrives (anything else is ignored). The line then wakes gattway through a
    /// descriptor, as a kernel line's edge does, and a script or a benchmark drives it.
    case socket(path: String)

    /// A spell in which a simulated sensor does not answer (a loose wire): from `after` since the
    /// simulator started, for `duration`.
    public struct Silence: Sendable, Hashable {
        public var after: Duration
        public var duration: Duration

        public init(after: Duration, duration: Duration) {
            self.after = after
            self.duration = duration
        }

        /// Whether the sensor is silent `sinceStart` after the simulator started.
        func contains(_ sinceStart: Duration) -> Bool {
            sinceStart >= after && sinceStart < after + duration
        }
    }

    /// One level of a `steps` generator.
    public struct Step: Sendable, Hashable {
        public var level: Bool
        public var duration: Duration

        public init(_ level: Bool, _ duration: Duration) {
            self.level = level
            self.duration = duration
        }
    }
}

/// Timings of the simulated sensors, shared with the readers' tests.
public enum SimulatedSensorTiming {
    /// Speed of sound used by the HC-SR04 simulation, m/s (dry air, 20 °C).
    public static let speedOfSound = 343.0
    public static let hcsr04EchoDelayNs: UInt64 = 250_000
    public static let hcsr04MinimumTriggerNs: UInt64 = 10_000
    public static let hcsr04MaximumDistance = 4.0
    /// Minimum host start signal each DHT model answers to.
    public static let dht22MinimumStartNs: UInt64 = 800_000
    public static let dht11MinimumStartNs: UInt64 = 18_000_000
}
