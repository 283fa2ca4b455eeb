import GPIO

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

    /// The chip as a backend lists it, for finding its lines as the simulator will.
    public var info: ChipInfo {
        ChipInfo(
            path: "/dev/\(name)", name: name, label: label,
            lines: lines.enumerated().map { LineInfo(offset: $0, name: $1.name) })
    }
}

public struct SimulatedGPIOLine: Sendable, Hashable {
    public var name: String
    /// What drives the line's input level; nil for a line that only outputs or stays low.
    public var generator: SignalGenerator?

    public init(name: String, generator: SignalGenerator?) {
        self.name = name
        self.generator = generator
    }
}
