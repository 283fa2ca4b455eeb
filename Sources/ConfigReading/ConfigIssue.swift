/// One problem found in a configuration file, located by its YAML path and line.
public struct ConfigIssue: Hashable, Sendable, CustomStringConvertible {
    /// The YAML path, e.g. `services[0].characteristics[2].uuid`; empty for the whole document.
    public let path: String
    /// 1-based line in the file, when the problem belongs to a place in it.
    public let line: Int?
    public let message: String

    public init(path: String, line: Int?, message: String) {
        self.path = path
        self.line = line
        self.message = message
    }

    /// `services[0].characteristics[2].uuid (line 41): "2A6G" is not a UUID`
    public var description: String {
        var place = path.isEmpty ? "configuration" : path
        if let line { place += " (line \(line))" }
        return "\(place): \(message)"
    }
}
