import GPIO

public struct RotaryEncoderSettings: SensorKindSettings {
    public var a: LineSelector
    public var b: LineSelector
    public var bias: GPIOBias
    /// Quadrature transitions per reported step (4 for the usual detented encoders).
    public var transitionsPerStep: Int
    /// When set, the position wraps around within this range.
    public var wrap: ClosedRange<Int>?

    public init(
        a: LineSelector, b: LineSelector, bias: GPIOBias = .pullUp, transitionsPerStep: Int = 4,
        wrap: ClosedRange<Int>? = nil
    ) {
        self.a = a
        self.b = b
        self.bias = bias
        self.transitionsPerStep = transitionsPerStep
        self.wrap = wrap
    }

    public func makeEngine(_ context: EngineContext) throws -> SensorEngineHandle {
        SensorEngineHandle(engine: try RotaryEncoderEngine(self, context: context))
    }
}
