import CYAML
import ConfigReading

/// Reads YAML text into `YAMLNode`s through libyaml's event parser: the one place libyaml is
/// called. libyaml does the scanning and the grammar (and words its errors); this builds the tree,
/// resolves aliases and refuses duplicate keys, which YAML forbids but libyaml leaves to its users.
public enum YAMLParser {
    /// The document's root, or nil when the text holds no document (empty or only comments).
    public static func parse(_ text: String) throws(YAMLSyntaxError) -> YAMLNode? {
        let bytes = Array(text.utf8)
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else {
            throw YAMLSyntaxError("libyaml could not start (out of memory)", line: nil)
        }
        defer { yaml_parser_delete(parser) }
        let result: Result<YAMLNode?, YAMLSyntaxError> = bytes.withUnsafeBufferPointer { buffer in
            yaml_parser_set_input_string(parser, buffer.baseAddress, buffer.count)
            var composer = Composer()
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(parser, &event) == 1 else {
                    return .failure(Self.error(of: parser.pointee))
                }
                defer { yaml_event_delete(&event) }
                do throws(YAMLSyntaxError) {
                    if try composer.take(event) { return .success(composer.root) }
                } catch {
                    return .failure(error)
                }
            }
        }
        return try result.get()
    }

    /// libyaml's own wording: `did not find expected key (while parsing a block mapping)`.
    private static func error(of parser: yaml_parser_t) -> YAMLSyntaxError {
        let problem = parser.problem.map { String(cString: $0) } ?? "unreadable YAML"
        let context = parser.context.map { " (\(String(cString: $0)))" } ?? ""
        // A reader error (bad encoding) has an offset but no line.
        let line = parser.error == YAML_READER_ERROR ? nil : Int(parser.problem_mark.line) + 1
        return YAMLSyntaxError(problem + context, line: line)
    }
}

/// Builds the tree from parser events, innermost open collection last.
private struct Composer {
    private enum Open {
        case sequence([YAMLNode], line: Int, anchor: String?)
        /// `keyLines` holds the line of each plain key seen so far, to name a duplicate.
        case mapping([YAMLPair], key: YAMLNode?, keyLines: [String: Int], line: Int, anchor: String?)
    }

    private(set) var root: YAMLNode?
    private var open: [Open] = []
    private var anchors: [String: YAMLNode] = [:]
    private var documents = 0

    /// Takes one event; true at the end of the stream.
    mutating func take(_ event: yaml_event_t) throws(YAMLSyntaxError) -> Bool {
        let line = Int(event.start_mark.line) + 1
        switch event.type {
        case YAML_STREAM_END_EVENT:
            return true
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                throw YAMLSyntaxError(
                    "expected a single document in the stream (but found another document)", line: line)
            }
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let text = String(
                decoding: UnsafeBufferPointer(start: scalar.value, count: Int(scalar.length)), as: UTF8.self)
            let node = YAMLNode(.scalar(text, isPlain: scalar.style == YAML_PLAIN_SCALAR_STYLE), line: line)
            try finish(node, anchor: Self.text(scalar.anchor))
        case YAML_ALIAS_EVENT:
            let name = Self.text(event.data.alias.anchor) ?? ""
            guard let node = anchors[name] else {
                throw YAMLSyntaxError("found undefined alias \"\(name)\"", line: line)
            }
            try finish(YAMLNode(node.content, line: line), anchor: nil)
        case YAML_SEQUENCE_START_EVENT:
            open.append(.sequence([], line: line, anchor: Self.text(event.data.sequence_start.anchor)))
        case YAML_MAPPING_START_EVENT:
            open.append(
                .mapping(
                    [], key: nil, keyLines: [:], line: line, anchor: Self.text(event.data.mapping_start.anchor)))
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
            switch open.removeLast() {
            case .sequence(let items, let line, let anchor):
                try finish(YAMLNode(.sequence(items), line: line), anchor: anchor)
            case .mapping(let pairs, _, _, let line, let anchor):
                try finish(YAMLNode(.mapping(pairs), line: line), anchor: anchor)
            }
        default:
            break
        }
        return false
    }

    /// Places a complete node in the collection that holds it, or makes it the root.
    private mutating func finish(_ node: YAMLNode, anchor: String?) throws(YAMLSyntaxError) {
        if let anchor { anchors[anchor] = node }
        guard let parent = open.popLast() else {
            root = node
            return
        }
        switch parent {
        case .sequence(var items, let line, let anchor):
            items.append(node)
            open.append(.sequence(items, line: line, anchor: anchor))
        case .mapping(var pairs, let key?, let keyLines, let line, let anchor):
            pairs.append(YAMLPair(key: key, value: node))
            open.append(.mapping(pairs, key: nil, keyLines: keyLines, line: line, anchor: anchor))
        case .mapping(let pairs, nil, var keyLines, let line, let anchor):
            if let text = node.scalar {
                if let first = keyLines[text] {
                    throw YAMLSyntaxError("duplicate key \"\(text)\" in one mapping", line: first)
                }
                keyLines[text] = node.line
            }
            open.append(.mapping(pairs, key: node, keyLines: keyLines, line: line, anchor: anchor))
        }
    }

    private static func text(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
