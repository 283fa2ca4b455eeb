/// A YAML path as gattway prints it: `services[0].characteristics[2].uuid`.
public struct ConfigPath: Hashable, Sendable, CustomStringConvertible {
    private var components: [Component] = []

    public enum Component: Hashable, Sendable {
        case key(String)
        case index(Int)
    }

    public static let root = ConfigPath()

    public func key(_ key: String) -> ConfigPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    public func index(_ index: Int) -> ConfigPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    public var parent: ConfigPath? {
        guard !components.isEmpty else { return nil }
        var copy = self
        copy.components.removeLast()
        return copy
    }

    public var description: String {
        var text = ""
        for component in components {
            switch component {
            case .key(let key): text += text.isEmpty ? key : ".\(key)"
            case .index(let index): text += "[\(index)]"
            }
        }
        return text
    }
}
