import Sensors

public struct GPIOConfig: Sendable, Hashable {
    public var backend: GPIOBackendKind
    /// The simulated chips; empty unless `backend` is `simulated`.
    public var simulatedChips: [SimulatedGPIOChip]

    public init(backend: GPIOBackendKind, simulatedChips: [SimulatedGPIOChip]) {
        self.backend = backend
        self.simulatedChips = simulatedChips
    }
}

public enum GPIOBackendKind: String, Sendable, Hashable, CaseIterable {
    case libgpiod
    case simulated
}

public struct SimulatedGPIOChip: Sendable, Hashable {
    /// Chip name, as `gpiochipN` on real hardware.
    public var name: String
    /// Chip label, as `pinctrl-bcm2711` on real hardware.
    public var label: String
    public var lines: [SimulatedGPIOLine]

    public init(name: String, label: String, lines: [SimulatedGPIOLine]) {
        self.name = name
        self.label = label
        self.lines = lines
    }
}

public struct SimulatedGPIOLine: Sendable, Hashable {
    public var name: String
    /// What drives the line's input level; nil for a line that only outputs or stays low.
    public var generator: LineGenerator?

    public init(name: String, generator: LineGenerator?) {
        self.name = name
        self.generator = generator
    }
}

/// A waveform the simulated backend produces on a line.
public enum LineGenerator: Sendable, Hashable {
    case constant(level: Bool)
    /// High for `duty` (0...1) of each `period`.
    case square(period: Duration, duty: Double)
    /// `rate` pulses per second, each `width` long.
    case pulses(rate: Double, width: Duration)
    /// Each step holds a level for a duration; the list restarts when `repeats`.
    case steps([LevelStep], repeats: Bool)
    /// Answers a host start signal with a DHT22 or DHT11 frame carrying these readings.
    case dht(DHTSettings.Model, temperature: Double, humidity: Double)
    /// Answers a pulse on the `trigger` line (same chip) with an echo for `distance` metres.
    case hcsr04(distance: Double, trigger: String)
    /// Levels another program sends as datagrams to a Unix socket at `path`.
    case socket(path: String)
}

public struct LevelStep: Sendable, Hashable {
    public var level: Bool
    public var duration: Duration

    public init(level: Bool, duration: Duration) {
        self.level = level
        self.duration = duration
    }
}
