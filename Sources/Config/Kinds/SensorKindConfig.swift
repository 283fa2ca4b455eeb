import GPIO
import Sensors
import Values

/// The kind-specific settings of one configured sensor, as written in the file. Each kind has one
/// type conforming to it, in its folder under `Kinds/` beside the description that parses it
/// (`SensorKindDescription`); the rest of gattway asks this protocol, never a list of kinds.
public protocol SensorKindConfig: Sendable, Hashable {
    /// The `kind:` it was written as (`dht22`).
    var name: String { get }
    /// The values the sensor produces; the first is the one a characteristic gets by default.
    var readings: [SensorReading] { get }
    /// Every line the sensor uses.
    var lines: [LineReference] { get }
    /// The lines it drives (an output's line, a distance sensor's trigger); the others it reads.
    var outputLines: [LineReference] { get }
    /// An output sensor: writes drive it, it measures nothing.
    var isOutput: Bool { get }
    /// Its value only grows (a counter): Home Assistant sums it as `total_increasing`.
    var isTotal: Bool { get }
    /// The BTHome objects its readings are broadcast as with `bthome: true`; empty when BTHome
    /// has none for it.
    var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] { get }
    /// The Sensors layer's settings for it, and the line filters its line settings stand for
    /// (`active_low` is `invert`, `debounce` is `debounce`). `line` resolves a line reference
    /// (the configuration's chip names to the simulator's labels); `stateDirectory` is where
    /// state that survives restarts is kept.
    func sensorSettings(
        line: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    )
}

extension SensorKindConfig {
    public var readings: [SensorReading] { [.value] }
    public var outputLines: [LineReference] { [] }
    public var isOutput: Bool { false }
    public var isTotal: Bool { false }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] { [] }
}

extension InputLineConfig {
    /// The line filters `active_low` and `debounce` stand for, in the Sensors layer's terms.
    var lineFilters: [SensorFilter] {
        (activeLow ? [.invert] : []) + (debounce > .zero ? [.debounce(debounce)] : [])
    }

    var gpioBias: GPIOBias {
        switch bias {
        case .asIs: .asIs
        case .disabled: .disabled
        case .pullUp: .pullUp
        case .pullDown: .pullDown
        }
    }
}
