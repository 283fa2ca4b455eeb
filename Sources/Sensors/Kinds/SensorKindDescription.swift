import ConfigReading

/// A sensor kind's schema: its `kind:` name, the keys it accepts, its rows of the configuration
/// reference and how its settings are read from the YAML nodes (`ConfigReading`). Each kind's
/// folder under `Kinds/` defines one (two for `dht22`/`dht11`) beside its engine; `SensorKinds.all`
/// lists them, and the configuration parser asks them, knowing no kind itself.
public struct SensorKindDescription: Sendable {
    /// What its value is, which decides the value filters (`filters:`) it takes.
    public enum Value: Sendable {
        /// Driven by writes, not measured (an output): no filters, not broadcast.
        case driven
        /// A number: the numeric filters (`moving_average`, `offset`, `scale`).
        case numeric
        /// 0 or 1: the numeric filters and the binary ones (`invert`, `delay_on`, `delay_off`).
        case binary
    }

    /// One row of the configuration reference, for the key `sensors[].<key>`. Rows of several
    /// kinds for the same key are merged into one (`ConfigReference`).
    public struct Setting: Sendable {
        public let key: String
        public let type: String
        public let defaultValue: String
        /// Without the kind's name: the reference puts it in front of a top-level key's meaning.
        public let meaning: String

        /// The default of a key that must be written.
        public static let required = "required"
    }

    /// The `kind:` it is written as.
    public let name: String
    /// Its keys beside those every sensor has, in the order error messages list them.
    public let settings: [String]
    /// Its reference rows for the keys no other kind shares the meaning of.
    public let reference: [Setting]
    public let value: Value
    /// Reads its settings; nil when a required one is missing or wrong (the reader has recorded
    /// the error).
    public let parse: @Sendable (SensorSettingsReader) -> (any SensorKindConfig)?
}

/// The keys of one `sensors[]` item, as a kind's `parse` reads them: the mapping, and lines
/// recorded as they are read so the parser can check each exists and is used once.
public final class SensorSettingsReader {
    private let mapping: ConfigMapping
    private let chip: String?
    public private(set) var lines: [(key: String, reference: LineReference)] = []

    public init(mapping: ConfigMapping) {
        self.mapping = mapping
        chip = mapping["chip"]?.nonEmptyString()
    }

    public subscript(key: String) -> ConfigNode? { mapping[key] }

    /// The line named under `key` (required), on the sensor's `chip`.
    public func line(_ key: String) -> LineReference? {
        guard let reference = mapping.required(key)?.nonEmptyString().map({ LineReference(name: $0, chip: chip) })
        else { return nil }
        lines.append((key, reference))
        return reference
    }

    /// The input line named under `key`, with the sensor's `bias`, `active_low` and `debounce`.
    public func input(_ key: String) -> InputLineConfig? {
        guard let reference = line(key) else { return nil }
        return InputLineConfig(
            line: reference, bias: mapping["bias"]?.choice(LineBias.self) ?? InputLineConfig.defaultBias,
            activeLow: mapping["active_low"]?.bool() ?? InputLineConfig.defaultActiveLow,
            debounce: mapping["debounce"]?.duration(in: .zero...(.seconds(10))) ?? InputLineConfig.defaultDebounce)
    }

    /// The keys every input kind has beside its line.
    public static let inputSettings = ["line", "bias", "active_low", "debounce"]
}
