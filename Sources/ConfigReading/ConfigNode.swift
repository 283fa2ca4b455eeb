/// A YAML node at a known path. Each typed accessor returns nil and records an error naming the
/// path, line and the expected type when the node does not hold what is asked for.
public struct ConfigNode {
    public let node: YAMLNode
    public let path: ConfigPath
    public let context: LoadContext

    public init(_ node: YAMLNode, path: ConfigPath, context: LoadContext) {
        self.node = node
        self.path = path
        self.context = context
        context.record(path, line: node.line)
    }

    public var line: Int? { node.line }

    /// Records an error at this node and returns nil, so accessors can `return fail(...)`.
    public func fail<T>(_ message: String) -> T? {
        report(message)
        return nil
    }

    /// Records an error at this node.
    public func report(_ message: String) {
        context.error(path, line: line, message)
    }

    public func warn(_ message: String) {
        context.warning(path, line: line, message)
    }

    public var isNull: Bool {
        guard case .scalar(let text, isPlain: true) = node.content else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(text)
    }

    /// How the node reads in a message: `"two"`, `a list`, `a mapping`.
    public var shown: String {
        switch node.content {
        case .scalar(let text, _): "\"\(text)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        }
    }

    /// The scalar's text, or nil with "expected <expected>, got …" recorded.
    public func scalarText(expected: String) -> String? {
        guard let text = node.scalar else { return fail("expected \(expected), got \(shown)") }
        return text
    }

    // MARK: Scalars

    public func string() -> String? {
        scalarText(expected: "a string")
    }

    public func nonEmptyString() -> String? {
        guard let text = string() else { return nil }
        guard !text.isEmpty else { return fail("must not be empty") }
        return text
    }

    public func bool() -> Bool? {
        guard let text = scalarText(expected: "true or false") else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: return fail("expected true or false, got \(shown)")
        }
    }

    /// Decimal or `0x` hexadecimal, within `range` when given.
    public func integer(in range: ClosedRange<Int>? = nil) -> Int? {
        integer(Int.self, in: range)
    }

    public func integer<T: FixedWidthInteger>(_ type: T.Type, in range: ClosedRange<T>? = nil) -> T? {
        guard let text = scalarText(expected: "an integer") else { return nil }
        let negative = text.hasPrefix("-")
        let unsigned = negative || text.hasPrefix("+") ? String(text.dropFirst()) : text
        let magnitude: Int64? =
            if unsigned.lowercased().hasPrefix("0x") { Int64(unsigned.dropFirst(2), radix: 16) } else { Int64(unsigned, radix: 10) }
        guard let magnitude else { return fail("expected an integer, got \(shown)") }
        let signed = negative ? -magnitude : magnitude
        guard let value = T(exactly: signed), range.map({ $0.contains(value) }) ?? true else {
            let bounds =
                range.map { "\($0.lowerBound)-\($0.upperBound)" }
                ?? "\(T.min)-\(T.max)"
            return fail("\(text) is out of range (\(bounds))")
        }
        return value
    }

    public func number(in range: ClosedRange<Double>? = nil) -> Double? {
        guard let text = scalarText(expected: "a number") else { return nil }
        guard let value = Double(text), value.isFinite else {
            return fail("expected a number, got \(shown)")
        }
        if let range, !range.contains(value) {
            return fail(
                "\(text) is out of range (\(Self.formatNumber(range.lowerBound))-"
                    + "\(Self.formatNumber(range.upperBound)))")
        }
        return value
    }

    public static func formatNumber(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// A duration such as `500ms` or `2s`, within `range` when given.
    public func duration(in range: ClosedRange<Duration>? = nil) -> Duration? {
        guard let text = scalarText(expected: "a duration") else { return nil }
        guard let value = DurationText.parse(text) else {
            return fail("\(shown) is not a duration (write a number and a unit: 500ms, 2s, 1m)")
        }
        if let range, !range.contains(value) {
            return fail(
                "\(text) is out of range (\(DurationText.format(range.lowerBound))-"
                    + "\(DurationText.format(range.upperBound)))")
        }
        return value
    }

    /// One of the raw values of `E`, with a did-you-mean hint.
    public func choice<E: CaseIterable & RawRepresentable>(_ type: E.Type) -> E? where E.RawValue == String {
        choice(among: E.allCases.map(\.rawValue)).flatMap(E.init(rawValue:))
    }

    /// One of `names`, with a did-you-mean hint.
    public func choice(among names: [String]) -> String? {
        guard let text = scalarText(expected: "one of \(names.joined(separator: ", "))") else {
            return nil
        }
        if names.contains(text) { return text }
        let hint = Suggestion.closest(to: text, among: names).map { "did you mean \"\($0)\"? " } ?? ""
        return fail("\(shown) is not valid; \(hint)expected one of \(names.joined(separator: ", "))")
    }

    /// Hexadecimal bytes, optionally separated by spaces or colons: `01 02 ff`, `0102ff`.
    public func hexBytes() -> [UInt8]? {
        guard let text = scalarText(expected: "hexadecimal bytes") else { return nil }
        guard let bytes = Self.parseHex(text) else {
            return fail("\(shown) is not hexadecimal bytes (write pairs of hex digits, as in \"01 a0 ff\")")
        }
        return bytes
    }

    public static func parseHex(_ text: String) -> [UInt8]? {
        let digits = text.filter { $0 != " " && $0 != ":" }
        guard digits.count % 2 == 0, digits.allSatisfy(\.isHexDigit) else { return nil }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            bytes.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    // MARK: Collections

    /// The items of a list, each at `path[i]`.
    public func list() -> [ConfigNode]? {
        guard case .sequence(let sequence) = node.content else {
            return fail("expected a list, got \(shown)")
        }
        return sequence.enumerated().map { ConfigNode($1, path: path.index($0), context: context) }
    }

    /// The scalar text under `key` when this is a mapping, without checking or reporting anything.
    public func plainValue(of key: String) -> String? {
        guard case .mapping(let pairs) = node.content else { return nil }
        return pairs.first { $0.key.scalar == key }?.value.scalar
    }

    /// A mapping whose keys must come from `keys`; any other key is reported with a hint.
    /// `forbidden` maps keys that are refused with a specific explanation to that explanation.
    public func mapping(keys: [String], forbidden: [String: String] = [:]) -> ConfigMapping? {
        guard case .mapping(let pairs) = node.content else {
            return fail("expected a mapping, got \(shown)")
        }
        var entries: [String: ConfigNode] = [:]
        var order: [String] = []
        for pair in pairs {
            guard let key = pair.key.scalar else {
                context.error(path, line: pair.key.line, "keys must be plain names")
                continue
            }
            let valuePath = path.key(key)
            if let explanation = forbidden[key] {
                context.error(valuePath, line: pair.key.line, explanation)
                continue
            }
            guard keys.contains(key) else {
                context.error(valuePath, line: pair.key.line, Self.unknownKeyMessage(key, known: keys))
                continue
            }
            entries[key] = ConfigNode(pair.value, path: valuePath, context: context)
            order.append(key)
        }
        return ConfigMapping(node: self, entries: entries, order: order)
    }

    public static func unknownKeyMessage(_ key: String, known: [String]) -> String {
        if let suggestion = Suggestion.closest(to: key, among: known) {
            return "unknown key; did you mean \"\(suggestion)\"?"
        }
        return "unknown key (expected one of: \(known.joined(separator: ", ")))"
    }
}

/// A mapping whose keys have been checked against the allowed set.
public struct ConfigMapping {
    public let node: ConfigNode
    private let entries: [String: ConfigNode]
    /// Present keys in file order.
    public let order: [String]

    public init(node: ConfigNode, entries: [String: ConfigNode], order: [String]) {
        self.node = node
        self.entries = entries
        self.order = order
    }

    public var path: ConfigPath { node.path }

    /// The value under `key`; nil when the key is absent or its value is null (`key:` / `~`).
    public subscript(key: String) -> ConfigNode? {
        guard let value = entries[key], !value.isNull else { return nil }
        return value
    }

    public func has(_ key: String) -> Bool { self[key] != nil }

    /// The value under `key`, recording `missing required key` when it is absent.
    public func required(_ key: String) -> ConfigNode? {
        if let value = self[key] { return value }
        node.context.error(path, line: node.line, "missing required key \"\(key)\"")
        return nil
    }
}
