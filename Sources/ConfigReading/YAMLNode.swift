/// One node of a YAML document, with the line it starts on (counting from 1).
///
/// Only what a configuration needs: scalars keep their text (tags are not resolved; the reader
/// decides what a scalar means from where it stands), mappings keep their keys in file order, and
/// aliases are replaced by the node their anchor names.
public struct YAMLNode: Sendable {
    public enum Content: Sendable {
        /// A scalar's text; `isPlain` when it was written without quotes or a block indicator
        /// (only a plain `~` or `null` is a null).
        case scalar(String, isPlain: Bool)
        case sequence([YAMLNode])
        case mapping([YAMLPair])
    }

    public var content: Content
    public var line: Int

    public init(_ content: Content, line: Int) {
        self.content = content
        self.line = line
    }

    /// The text when this is a scalar.
    public var scalar: String? {
        if case .scalar(let text, _) = content { text } else { nil }
    }
}

public struct YAMLPair: Sendable {
    public var key: YAMLNode
    public var value: YAMLNode

    public init(key: YAMLNode, value: YAMLNode) {
        self.key = key
        self.value = value
    }
}
