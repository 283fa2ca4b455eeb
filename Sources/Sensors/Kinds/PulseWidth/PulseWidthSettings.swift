import GPIO

public struct PulseWidthSettings: SensorKindSettings {
    public var line: LineSelector
    public var bias: GPIOBias
    /// Averages of the cycles completed in each interval are reported.
    public var reportInterval: Duration

    public init(line: LineSelector, bias: GPIOBias = .asIs, reportInterval: Duration = .seconds(1)) {
        self.line = line
        self.bias = bias
        self.reportInterval = reportInterval
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try PulseWidthEngine(self, context: context))
    }
}
