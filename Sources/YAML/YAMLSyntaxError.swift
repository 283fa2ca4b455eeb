/// Text that is not one well-formed YAML document, with the line where reading stopped.
public struct YAMLSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var line: Int?

    public init(_ message: String, line: Int?) {
        self.message = message
        self.line = line
    }

    public var description: String {
        line.map { "line \($0): \(message)" } ?? message
    }
}
