import GPIO

public struct DistanceSettings: SensorKindSettings {
    public var trigger: LineSelector
    public var echo: LineSelector
    /// Time between measurements (at least 60 ms, the HC-SR04's cycle).
    public var interval: Duration
    /// How long to wait for the echo to end before reporting a timeout.
    public var timeout: Duration
    /// Speed of sound in m/s.
    public var speedOfSound: Double

    public init(
        trigger: LineSelector, echo: LineSelector, interval: Duration = .seconds(1),
        timeout: Duration = .milliseconds(40), speedOfSound: Double = 343
    ) {
        self.trigger = trigger
        self.echo = echo
        self.interval = interval
        self.timeout = timeout
        self.speedOfSound = speedOfSound
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try DistanceEngine(self, context: context))
    }
}
