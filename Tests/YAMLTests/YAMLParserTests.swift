import ConfigReading
import Testing
import YAML

/// The tree libyaml's events build, written compactly: `"text"` for a plain scalar, `'text'` for a
/// quoted one, `[a, b]`, `{k: v}`, each followed by `@line`.
private func shape(_ node: YAMLNode) -> String {
    let body =
        switch node.content {
        case .scalar(let text, let isPlain): isPlain ? "\"\(text)\"" : "'\(text)'"
        case .sequence(let items): "[" + items.map(shape).joined(separator: ", ") + "]"
        case .mapping(let pairs): "{" + pairs.map { "\(shape($0.key)): \(shape($0.value))" }.joined(separator: ", ") + "}"
        }
    return body + "@\(node.line)"
}

@Suite struct YAMLParserTests {
    @Test(arguments: [
        ("a: 1", #"{"a"@1: "1"@1}@1"#),
        ("- x\n- 'y'\n- \"\"", #"["x"@1, 'y'@2, ''@3]@1"#),
        ("device:\n  name: hall\n  id: 7\n", #"{"device"@1: {"name"@2: "hall"@2, "id"@3: "7"@3}@2}@1"#),
        ("k: {a: [1, 2], b: ~}", #"{"k"@1: {"a"@1: ["1"@1, "2"@1]@1, "b"@1: "~"@1}@1}@1"#),
        ("k: |\n  two\n  lines\n", "{\"k\"@1: 'two\nlines\n'@1}@1"),
        // Keys keep file order; a later key is not sorted before an earlier one.
        ("z: 1\na: 2", #"{"z"@1: "1"@1, "a"@2: "2"@2}@1"#),
        // An alias is the node its anchor names, at the alias's own line.
        ("base: &b {x: 1}\nother: *b", #"{"base"@1: {"x"@1: "1"@1}@1, "other"@2: {"x"@1: "1"@1}@2}@1"#),
        // Tags are not resolved: the text stays as written.
        ("n: !!str 0x10", #"{"n"@1: "0x10"@1}@1"#),
        ("# only a comment\n---\nk: v\n...\n", #"{"k"@3: "v"@3}@3"#)
    ])
    func buildsTheTreeWithLines(text: String, expected: String) throws {
        let root = try #require(try YAMLParser.parse(text))
        #expect(shape(root) == expected)
    }

    @Test(arguments: ["", "# nothing here\n", "   \n"])
    func textWithoutADocumentHasNoRoot(text: String) throws {
        #expect(try YAMLParser.parse(text) == nil)
    }

    @Test(arguments: [
        (
            "device:\n  name: x\n id: y\n",
            YAMLSyntaxError("did not find expected key (while parsing a block mapping)", line: 3)
        ),
        ("a: 1\nb: 2\na: 3\n", YAMLSyntaxError(#"duplicate key "a" in one mapping"#, line: 1)),
        ("x: *nowhere", YAMLSyntaxError(#"found undefined alias "nowhere""#, line: 1)),
        ("a: 1\n---\nb: 2\n", YAMLSyntaxError("expected a single document in the stream (but found another document)", line: 2)),
        ("k: [1, 2", YAMLSyntaxError("did not find expected ',' or ']' (while parsing a flow sequence)", line: 2)),
        ("k: \"open", YAMLSyntaxError("found unexpected end of stream (while scanning a quoted scalar)", line: 1)),
        ("\tk: v", YAMLSyntaxError("found character that cannot start any token (while scanning for the next token)", line: 1))
    ])
    func refusesMalformedTextNamingTheLine(text: String, expected: YAMLSyntaxError) {
        #expect(throws: expected) { try YAMLParser.parse(text) }
    }

    @Test func duplicateKeysInDifferentMappingsAreFine() throws {
        let root = try #require(try YAMLParser.parse("a: {k: 1}\nb: {k: 2}\n"))
        guard case .mapping(let pairs) = root.content else {
            Issue.record("not a mapping")
            return
        }
        #expect(pairs.map(\.key.scalar) == ["a", "b"])
    }
}
