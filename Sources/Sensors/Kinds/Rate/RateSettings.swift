import GPIO

public struct RateSettings: SensorKindSettings {
    public enum Per: String, Sendable, Hashable, CaseIterable { case second, minute }

    public var line: LineSelector
    public var bias: GPIOBias
    public var per: Per
    /// The sliding window the rate is measured over.
    public var window: Duration
    /// Multiplies the pulse rate (e.g. litres per pulse).
    public var scale: Double
    public var reportInterval: Duration

    public init(
        line: LineSelector, bias: GPIOBias = .asIs, per: Per = .second,
        window: Duration = .seconds(10), scale: Double = 1, reportInterval: Duration = .seconds(1)
    ) {
        self.line = line
        self.bias = bias
        self.per = per
        self.window = window
        self.scale = scale
        self.reportInterval = reportInterval
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try RateEngine(self, context: context))
    }
}
