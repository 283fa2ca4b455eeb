import BluetoothCore
import YAML

/// Everything one load of a configuration learns besides the model: the problems found and the
/// line of every path visited (so checks that run on the finished model can still name lines).
/// Lives for one load on one thread.
final class LoadContext {
    private(set) var errors: [ConfigIssue] = []
    private(set) var warnings: [ConfigIssue] = []
    private var lines: [String: Int] = [:]

    func error(_ path: ConfigPath, line: Int?, _ message: String) {
        errors.append(
            ConfigIssue(
                path: path.description, line: line ?? self.line(of: path),
                message: message))
    }

    func warning(_ path: ConfigPath, line: Int?, _ message: String) {
        warnings.append(
            ConfigIssue(
                path: path.description, line: line ?? self.line(of: path),
                message: message))
    }

    func record(_ path: ConfigPath, line: Int?) {
        if let line { lines[path.description] = line }
    }

    /// The line of `path`, or of its nearest recorded ancestor.
    func line(of path: ConfigPath) -> Int? {
        var current: ConfigPath? = path
        while let candidate = current {
            if let line = lines[candidate.description] { return line }
            current = candidate.parent
        }
        return nil
    }
}

/// A YAML path as gattway prints it: `services[0].characteristics[2].uuid`.
struct ConfigPath: Hashable, CustomStringConvertible {
    private var components: [Component] = []

    enum Component: Hashable {
        case key(String)
        case index(Int)
    }

    static let root = ConfigPath()

    func key(_ key: String) -> ConfigPath {
        var copy = self
        copy.components.append(.key(key))
        return copy
    }

    func index(_ index: Int) -> ConfigPath {
        var copy = self
        copy.components.append(.index(index))
        return copy
    }

    var parent: ConfigPath? {
        guard !components.isEmpty else { return nil }
        var copy = self
        copy.components.removeLast()
        return copy
    }

    var description: String {
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

/// A YAML node at a known path. Each typed accessor returns nil and records an error naming the
/// path, line and the expected type when the node does not hold what is asked for.
struct ConfigNode {
    let node: YAMLNode
    let path: ConfigPath
    let context: LoadContext

    init(_ node: YAMLNode, path: ConfigPath, context: LoadContext) {
        self.node = node
        self.path = path
        self.context = context
        context.record(path, line: node.line)
    }

    var line: Int? { node.line }

    /// Records an error at this node and returns nil, so accessors can `return fail(...)`.
    func fail<T>(_ message: String) -> T? {
        report(message)
        return nil
    }

    /// Records an error at this node.
    func report(_ message: String) {
        context.error(path, line: line, message)
    }

    func warn(_ message: String) {
        context.warning(path, line: line, message)
    }

    var isNull: Bool {
        guard case .scalar(let text, isPlain: true) = node.content else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(text)
    }

    /// How the node reads in a message: `"two"`, `a list`, `a mapping`.
    var shown: String {
        switch node.content {
        case .scalar(let text, _): "\"\(text)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        }
    }

    private func scalarText(expected: String) -> String? {
        guard let text = node.scalar else { return fail("expected \(expected), got \(shown)") }
        return text
    }

    // MARK: Scalars

    func string() -> String? {
        scalarText(expected: "a string")
    }

    func nonEmptyString() -> String? {
        guard let text = string() else { return nil }
        guard !text.isEmpty else { return fail("must not be empty") }
        return text
    }

    func bool() -> Bool? {
        guard let text = scalarText(expected: "true or false") else { return nil }
        switch text.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: return fail("expected true or false, got \(shown)")
        }
    }

    /// Decimal or `0x` hexadecimal, within `range` when given.
    func integer(in range: ClosedRange<Int>? = nil) -> Int? {
        integer(Int.self, in: range)
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type, in range: ClosedRange<T>? = nil) -> T? {
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

    func number(in range: ClosedRange<Double>? = nil) -> Double? {
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

    static func formatNumber(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// A duration such as `500ms` or `2s`, within `range` when given.
    func duration(in range: ClosedRange<Duration>? = nil) -> Duration? {
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

    /// A 16-bit SIG short form (`2A6E`, `0x2A6E`), 32-bit, or full 128-bit UUID.
    func uuid() -> BluetoothUUID? {
        guard let text = scalarText(expected: "a UUID") else { return nil }
        guard let uuid = BluetoothUUID(text) else { return fail("\(shown) is not a UUID") }
        return uuid
    }

    /// One of the raw values of `E`, with a did-you-mean hint.
    func choice<E: CaseIterable & RawRepresentable>(_ type: E.Type) -> E? where E.RawValue == String {
        choice(among: E.allCases.map(\.rawValue)).flatMap(E.init(rawValue:))
    }

    /// One of `names`, with a did-you-mean hint.
    func choice(among names: [String]) -> String? {
        guard let text = scalarText(expected: "one of \(names.joined(separator: ", "))") else {
            return nil
        }
        if names.contains(text) { return text }
        let hint = Suggestion.closest(to: text, among: names).map { "did you mean \"\($0)\"? " } ?? ""
        return fail("\(shown) is not valid; \(hint)expected one of \(names.joined(separator: ", "))")
    }

    /// Hexadecimal bytes, optionally separated by spaces or colons: `01 02 ff`, `0102ff`.
    func hexBytes() -> [UInt8]? {
        guard let text = scalarText(expected: "hexadecimal bytes") else { return nil }
        guard let bytes = Self.parseHex(text) else {
            return fail("\(shown) is not hexadecimal bytes (write pairs of hex digits, as in \"01 a0 ff\")")
        }
        return bytes
    }

    static func parseHex(_ text: String) -> [UInt8]? {
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
    func list() -> [ConfigNode]? {
        guard case .sequence(let sequence) = node.content else {
            return fail("expected a list, got \(shown)")
        }
        return sequence.enumerated().map { ConfigNode($1, path: path.index($0), context: context) }
    }

    /// The scalar text under `key` when this is a mapping, without checking or reporting anything.
    func plainValue(of key: String) -> String? {
        guard case .mapping(let pairs) = node.content else { return nil }
        return pairs.first { $0.key.scalar == key }?.value.scalar
    }

    /// A mapping whose keys must come from `keys`; any other key is reported with a hint.
    /// `forbidden` maps keys that are refused with a specific explanation to that explanation.
    func mapping(keys: [String], forbidden: [String: String] = [:]) -> ConfigMapping? {
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

    /// A mapping of the keys `ConfigReference` documents under `referencePath`.
    func mapping(_ referencePath: String, forbidden: [String: String] = [:]) -> ConfigMapping? {
        mapping(keys: ConfigReference.keys(under: referencePath), forbidden: forbidden)
    }

    static func unknownKeyMessage(_ key: String, known: [String]) -> String {
        if let suggestion = Suggestion.closest(to: key, among: known) {
            return "unknown key; did you mean \"\(suggestion)\"?"
        }
        return "unknown key (expected one of: \(known.joined(separator: ", ")))"
    }
}

/// A mapping whose keys have been checked against the allowed set.
struct ConfigMapping {
    let node: ConfigNode
    private let entries: [String: ConfigNode]
    /// Present keys in file order.
    let order: [String]

    init(node: ConfigNode, entries: [String: ConfigNode], order: [String]) {
        self.node = node
        self.entries = entries
        self.order = order
    }

    var path: ConfigPath { node.path }

    /// The value under `key`; nil when the key is absent or its value is null (`key:` / `~`).
    subscript(key: String) -> ConfigNode? {
        guard let value = entries[key], !value.isNull else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { self[key] != nil }

    /// The value under `key`, recording `missing required key` when it is absent.
    func required(_ key: String) -> ConfigNode? {
        if let value = self[key] { return value }
        node.context.error(path, line: node.line, "missing required key \"\(key)\"")
        return nil
    }
}
