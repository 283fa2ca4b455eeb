import GPIO

public struct CounterSettings: SensorKindSettings {
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

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try CounterEngine(self, context: context))
    }
}
