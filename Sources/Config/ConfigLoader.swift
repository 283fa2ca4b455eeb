import ConfigReading
import FoundationEssentials
import YAML

/// A configuration that passed validation, with the warnings it produced.
public struct LoadedConfig: Sendable {
    public var config: GatewayConfig
    public var warnings: [ConfigIssue]
}

/// Reads a configuration file, reporting every problem in it at once.
public enum ConfigLoader {
    /// `machineIDFile`: what `device.name_add_suffix` reads (`/etc/machine-id`; tests give their own).
    public static func load(
        file path: String, machineIDFile: String = ConfigDefaults.machineIDFile
    ) throws(ConfigError) -> LoadedConfig {
        func fail(_ reason: String) -> ConfigError {
            ConfigError(source: path, errors: [ConfigIssue(path: "", line: nil, message: reason)])
        }
        let files = FileManager.default
        guard files.fileExists(atPath: path) else { throw fail("no such file") }
        guard files.isReadableFile(atPath: path) else { throw fail("permission denied") }
        guard let data = files.contents(atPath: path) else { throw fail("cannot be read") }
        guard let text = String(data: data, encoding: .utf8) else { throw fail("is not UTF-8 text") }
        return try load(yaml: text, source: path, machineIDFile: machineIDFile)
    }

    public static func load(
        yaml: String, source: String = "<string>", machineIDFile: String = ConfigDefaults.machineIDFile
    ) throws(ConfigError) -> LoadedConfig {
        let root: YAMLNode?
        do {
            root = try YAMLParser.parse(yaml)
        } catch {
            throw ConfigError(source: source, errors: [syntaxIssue(error)])
        }
        let context = LoadContext()
        let document = root.map { ConfigNode($0, path: .root, context: context) }
        let config = ConfigParser(context: context, machineIDFile: machineIDFile).parse(document)
        let byLine: (ConfigIssue, ConfigIssue) -> Bool = { ($0.line ?? 0) < ($1.line ?? 0) }
        let errors = stableSorted(context.errors, by: byLine)
        let warnings = stableSorted(context.warnings, by: byLine)
        guard errors.isEmpty else {
            throw ConfigError(source: source, errors: errors, warnings: warnings)
        }
        return LoadedConfig(config: config, warnings: warnings)
    }

    private static func stableSorted(
        _ issues: [ConfigIssue],
        by less: (ConfigIssue, ConfigIssue) -> Bool
    ) -> [ConfigIssue] {
        issues.enumerated().sorted {
            less($0.element, $1.element)
                || (!less($1.element, $0.element)
                    && $0.offset < $1.offset)
        }.map(\.element)
    }

    /// A YAML syntax error as one issue with its line.
    static func syntaxIssue(_ error: YAMLSyntaxError) -> ConfigIssue {
        ConfigIssue(path: "", line: error.line, message: "invalid YAML: \(error.message)")
    }
}
