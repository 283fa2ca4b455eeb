/// Everything one load of a configuration learns besides the model: the problems found and the
/// line of every path visited (so checks that run on the finished model can still name lines).
/// Lives for one load on one thread.
public final class LoadContext {
    public init() {}

    public private(set) var errors: [ConfigIssue] = []
    public private(set) var warnings: [ConfigIssue] = []
    private var lines: [String: Int] = [:]

    public func error(_ path: ConfigPath, line: Int?, _ message: String) {
        errors.append(
            ConfigIssue(
                path: path.description, line: line ?? self.line(of: path),
                message: message))
    }

    public func warning(_ path: ConfigPath, line: Int?, _ message: String) {
        warnings.append(
            ConfigIssue(
                path: path.description, line: line ?? self.line(of: path),
                message: message))
    }

    public func record(_ path: ConfigPath, line: Int?) {
        if let line { lines[path.description] = line }
    }

    /// The line of `path`, or of its nearest recorded ancestor.
    public func line(of path: ConfigPath) -> Int? {
        var current: ConfigPath? = path
        while let candidate = current {
            if let line = lines[candidate.description] { return line }
            current = candidate.parent
        }
        return nil
    }
}
