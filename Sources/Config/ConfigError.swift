import ConfigReading

/// A configuration that cannot be used, with every problem found in it (not just the first).
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// The file the configuration came from, or a label such as `<string>`.
    public let source: String
    /// Every error, in file order.
    public let errors: [ConfigIssue]
    /// Problems that would not stop gattway, reported alongside the errors.
    public let warnings: [ConfigIssue]

    public init(source: String, errors: [ConfigIssue], warnings: [ConfigIssue] = []) {
        self.source = source
        self.errors = errors
        self.warnings = warnings
    }

    public var description: String {
        let noun = errors.count == 1 ? "error" : "errors"
        return
            (["\(source): \(errors.count) \(noun)"] + errors.map { "  error: \($0)" }
            + warnings.map { "  warning: \($0)" }).joined(separator: "\n")
    }
}
