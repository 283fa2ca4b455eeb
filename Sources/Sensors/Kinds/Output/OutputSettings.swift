import GPIO

public struct OutputSensorSettings: Sendable, Equatable {
    public var line: LineSelector
    public var initialValue: Bool

    public init(line: LineSelector, initialValue: Bool = false) {
        self.line = line
        self.initialValue = initialValue
    }
}
