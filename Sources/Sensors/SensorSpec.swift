/// One configured sensor: plain values the configuration layer maps its YAML onto.
public struct SensorSpec: Sendable, Equatable {
    /// Unique name; also the file name of persisted state.
    public var name: String
    /// What it measures: one of the kinds' settings (`BinarySettings`, `CounterSettings`, …).
    public var kind: any SensorKindSettings
    /// Applied in order. `debounce` and `invert` act on the GPIO line itself (kernel debounce on
    /// libgpiod v2, software elsewhere; active-low); the others transform the values.
    public var filters: [SensorFilter]
    /// Edge events buffered per input line (the kernel's buffer on libgpiod v2), when more than
    /// the kind's default is needed for fast signals; 0 keeps the default.
    public var eventBufferSize: Int

    public init(
        name: String, kind: any SensorKindSettings, filters: [SensorFilter] = [],
        eventBufferSize: Int = 0
    ) {
        self.name = name
        self.kind = kind
        self.filters = filters
        self.eventBufferSize = eventBufferSize
    }

    public static func == (lhs: SensorSpec, rhs: SensorSpec) -> Bool {
        lhs.name == rhs.name && lhs.kind.isEqual(to: rhs.kind) && lhs.filters == rhs.filters
            && lhs.eventBufferSize == rhs.eventBufferSize
    }
}

/// The settings of one sensor kind. Each kind's folder under `Kinds/` holds its settings type,
/// conforming to this, and the engine `makeEngine` builds, beside its schema; nothing else in
/// this module knows the kinds but their registry, `SensorKinds.all`. Only this module can build engines: `EngineContext` and `SensorEngineHandle` have
/// no public initializers.
public protocol SensorKindSettings: Sendable, Equatable {
    func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle
}

extension SensorKindSettings {
    /// Equal to `other` when it is the same kind with the same settings.
    func isEqual(to other: any SensorKindSettings) -> Bool {
        (other as? Self) == self
    }
}

/// An engine `SensorKindSettings.makeEngine` built.
public struct SensorEngineHandle {
    let engine: any SensorEngine
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
