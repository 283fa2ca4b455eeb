/// Value types shared by every GPIO backend. Times are kernel CLOCK_MONOTONIC nanoseconds
/// (`UInt64`), the clock libgpiod stamps edge events with; a simulated backend keeps its own
/// clock in the same unit.

/// Internal pull resistor of an input.
public enum GPIOBias: String, Sendable, Equatable, CaseIterable {
    /// Leave whatever the line is configured with.
    case asIs = "as-is"
    case disabled
    case pullUp = "pull-up"
    case pullDown = "pull-down"
}

/// Which logical transitions of an input produce edge events.
public enum EdgeDetection: String, Sendable, Equatable, CaseIterable {
    case none, rising, falling, both

    package func accepts(_ edge: Edge) -> Bool {
        switch self {
        case .none: false
        case .both: true
        case .rising: edge == .rising
        case .falling: edge == .falling
        }
    }
}

/// A logical transition (after active-low) of an input line.
public enum Edge: Sendable, Equatable {
    case rising, falling

    /// The logical level the line has after this edge.
    public var level: Bool { self == .rising }
}

/// One edge as the kernel reports it.
public struct EdgeEvent: Sendable, Equatable {
    public var edge: Edge
    /// Kernel CLOCK_MONOTONIC time of the edge, in nanoseconds.
    public var timestampNs: UInt64
    /// Per-line sequence number: the kernel's on libgpiod v2 and the simulator, gattway's own
    /// count on libgpiod v1 (which does not provide one).
    public var sequence: UInt64

    public init(edge: Edge, timestampNs: UInt64, sequence: UInt64) {
        self.edge = edge
        self.timestampNs = timestampNs
        self.sequence = sequence
    }
}

/// The events read from one line in one go, with the number of events found missing in
/// between (kernel or user-space buffer overflow). Lost events are never dropped silently.
public struct EdgeEventBatch: Sendable, Equatable {
    public var events: [EdgeEvent]
    public var lost: Int

    public init(events: [EdgeEvent] = [], lost: Int = 0) {
        self.events = events
        self.lost = lost
    }
}

/// Names one line: by its name (`GPIO17`), optionally restricted to one chip given by label
/// (`pinctrl-rp1`), name (`gpiochip0`) or path (`/dev/gpiochip0`). Naming lines instead of
/// numbering them lets one configuration work on a Pi 4 and a Pi 5.
public struct LineSelector: Sendable, Equatable, Hashable, CustomStringConvertible {
    public var name: String
    public var chip: String?

    public init(_ name: String, chip: String? = nil) {
        self.name = name
        self.chip = chip
    }

    public var description: String {
        chip.map { "\(name) on \($0)" } ?? name
    }
}

/// How an input line is requested.
public struct InputSettings: Sendable, Equatable {
    public var bias: GPIOBias
    public var activeLow: Bool
    public var edges: EdgeDetection
    /// Debounce period, zero for none. Done by the kernel on libgpiod v2 and in
    /// software (same semantics: an edge is reported once the level held for the period, stamped
    /// at the end of the period) on libgpiod v1 and in the simulator.
    public var debounce: Duration
    /// Edge events buffered before the oldest are overwritten (kernel buffer on libgpiod v2 and
    /// in the simulator; gattway's user-space buffer on v1). 0 selects the default.
    public var eventBufferSize: Int

    public init(
        bias: GPIOBias = .asIs, activeLow: Bool = false, edges: EdgeDetection = .none,
        debounce: Duration = .zero, eventBufferSize: Int = 0
    ) {
        self.bias = bias
        self.activeLow = activeLow
        self.edges = edges
        self.debounce = debounce
        self.eventBufferSize = eventBufferSize
    }

    /// The buffer size used when none is given: the kernel's own default is 16 per line, which
    /// a burst (a DHT frame is 84 edges) easily overflows.
    public static let defaultEventBufferSize = 64

    package var effectiveBufferSize: Int { eventBufferSize > 0 ? eventBufferSize : Self.defaultEventBufferSize }
}

/// How an output line is requested.
public struct OutputSettings: Sendable, Equatable {
    public var activeLow: Bool
    /// Logical value driven as soon as the line is requested.
    public var initialValue: Bool
    /// Edge events to buffer once this output is switched to an input
    /// (`OutputLine.switchToInput`): libgpiod v2 sizes a request's kernel event buffer only when
    /// the request is made, so an output that will become an input reserves it here. Same meaning
    /// as `InputSettings.eventBufferSize`; 0 selects the default.
    public var eventBufferSize: Int

    public init(activeLow: Bool = false, initialValue: Bool = false, eventBufferSize: Int = 0) {
        self.activeLow = activeLow
        self.initialValue = initialValue
        self.eventBufferSize = eventBufferSize
    }
}

/// Direction of a line as reported by the chip.
public enum LineDirection: String, Sendable, Equatable {
    case input, output
}

/// One line of a chip as listed by `gattway lines`.
public struct LineInfo: Sendable, Equatable {
    public var offset: Int
    /// Empty when the line has no name.
    public var name: String
    /// Who holds the line, empty when free.
    public var consumer: String
    public var used: Bool
    public var direction: LineDirection
    public var activeLow: Bool
    public var bias: GPIOBias

    public init(
        offset: Int, name: String, consumer: String = "", used: Bool = false,
        direction: LineDirection = .input, activeLow: Bool = false, bias: GPIOBias = .asIs
    ) {
        self.offset = offset
        self.name = name
        self.consumer = consumer
        self.used = used
        self.direction = direction
        self.activeLow = activeLow
        self.bias = bias
    }
}

/// One GPIO chip and its lines.
public struct ChipInfo: Sendable, Equatable {
    /// `/dev/gpiochipN`, or `sim:<label>` for a simulated chip.
    public var path: String
    /// `gpiochipN`, or the simulated chip's label.
    public var name: String
    public var label: String
    public var lines: [LineInfo]

    public init(path: String, name: String, label: String, lines: [LineInfo]) {
        self.path = path
        self.name = name
        self.label = label
        self.lines = lines
    }

    /// `gpiochip0 [pinctrl-bcm2835]`, as errors list chips.
    var summary: String { "\(name) [\(label)]" }

    /// Whether `selector.chip` (label, name or path) designates this chip.
    func matches(chip: String) -> Bool {
        chip == path || chip == name || chip == label
    }
}

/// Where a selector was found: the chip and the line offset on it.
public struct ResolvedLine: Sendable, Equatable, CustomStringConvertible {
    public var chip: ChipInfo
    public var offset: Int
    public var name: String

    public var description: String { "\(name) (\(chip.name) line \(offset))" }
}
