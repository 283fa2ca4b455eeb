import GPIO

public struct BinarySettings: SensorKindSettings {
    public var line: LineSelector
    public var bias: GPIOBias
    /// An active state is reported inactive only once `holdTime` has passed since it last became
    /// active (a PIR's "motion" stays on for a while). Zero reports every change at once.
    public var holdTime: Duration
    /// Tells presses apart (single, double, long) on the `press` channel; nil: no presses.
    public var press: PressSettings?

    public init(line: LineSelector, bias: GPIOBias = .asIs, holdTime: Duration = .zero, press: PressSettings? = nil) {
        self.line = line
        self.bias = bias
        self.holdTime = holdTime
        self.press = press
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try BinaryEngine(self, context: context))
    }
}
