import GPIO

public struct BinarySettings: Sendable, Equatable {
    public var line: LineSelector
    public var bias: GPIOBias
    /// An active state is reported inactive only once `holdTime` has passed since it last became
    /// active (a PIR's "motion" stays on for a while). Zero reports every change at once.
    public var holdTime: Duration

    public init(line: LineSelector, bias: GPIOBias = .asIs, holdTime: Duration = .zero) {
        self.line = line
        self.bias = bias
        self.holdTime = holdTime
    }
}
