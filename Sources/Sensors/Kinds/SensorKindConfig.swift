import GPIO
import Values

/// The kind-specific settings of one configured sensor, as written in the file. Each kind has one
/// type conforming to it, in its folder under `Kinds/` beside the description that parses it
/// (`SensorKindDescription`) and the engine that runs it; the rest of gattway asks this protocol,
/// never a list of kinds and never a kind's type.
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
    /// Its value is 0 or 1 (a button, a door contact): Home Assistant shows it as a binary sensor,
    /// and it can confirm pairings.
    var isBinary: Bool { get }
    /// The presses its `press` reading tells apart; empty when it has none.
    var pressEvents: [PressEvent] { get }
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
    public var isBinary: Bool { false }
    public var pressEvents: [PressEvent] { [] }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] { [] }
}
