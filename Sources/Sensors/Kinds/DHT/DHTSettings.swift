import GPIO

public struct DHTSettings: SensorKindSettings {
    public enum Model: String, Sendable, Hashable, CaseIterable { case dht22, dht11 }

    public var model: Model
    public var line: LineSelector
    /// Time between reads; never less than 2 s, the sensor's own limit.
    public var interval: Duration

    public init(model: Model, line: LineSelector, interval: Duration = .seconds(10)) {
        self.model = model
        self.line = line
        self.interval = interval
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: DHTEngine(self, context: context))
    }
}
