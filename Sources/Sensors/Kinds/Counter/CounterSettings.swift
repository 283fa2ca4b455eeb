import GPIO

public struct CounterSettings: SensorKindSettings {
    public var line: LineSelector
    public var bias: GPIOBias
    /// Where `<name>.count` keeps the total across restarts; nil keeps it in memory only.
    public var stateDirectory: String?
    /// The total is saved and then reported at most this often (and at once on the first pulse
    /// after a quiet spell): the state file is written at most once per interval.
    public var reportInterval: Duration

    public init(
        line: LineSelector, bias: GPIOBias = .asIs, stateDirectory: String? = nil,
        reportInterval: Duration = .seconds(1)
    ) {
        self.line = line
        self.bias = bias
        self.stateDirectory = stateDirectory
        self.reportInterval = reportInterval
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try CounterEngine(self, context: context))
    }
}
