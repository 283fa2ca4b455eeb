import GPIO

public struct OutputSensorSettings: SensorKindSettings {
    public var line: LineSelector
    public var initialValue: Bool

    public init(line: LineSelector, initialValue: Bool = false) {
        self.line = line
        self.initialValue = initialValue
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try OutputEngine(self, context: context))
    }
}
