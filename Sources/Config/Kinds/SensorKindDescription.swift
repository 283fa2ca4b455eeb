import Sensors

/// What the configuration knows about one sensor kind: its `kind:` name, the keys it accepts,
/// its rows of the configuration reference and how its settings are read. Each kind's folder
/// under `Kinds/` defines one (two for `dht22`/`dht11`); `SensorKinds.all` lists them.
struct SensorKindDescription: Sendable {
    /// What its value is, which decides the value filters (`filters:`) it takes.
    enum Value: Sendable {
        /// Driven by writes, not measured (an output): no filters, not broadcast.
        case driven
        /// A number: the numeric filters (`moving_average`, `offset`, `scale`).
        case numeric
        /// 0 or 1: the numeric filters and the binary ones (`invert`, `delay_on`, `delay_off`).
        case binary
    }

    /// One row of the configuration reference, for the key `sensors[].<key>`. Rows of several
    /// kinds for the same key are merged into one (`ConfigReference`).
    struct Setting: Sendable {
        let key: String
        let type: String
        let defaultValue: String
        /// Without the kind's name: the reference puts it in front of a top-level key's meaning.
        let meaning: String
    }

    /// The `kind:` it is written as.
    let name: String
    /// Its keys beside those every sensor has, in the order error messages list them.
    let settings: [String]
    /// Its reference rows for the keys no other kind shares the meaning of.
    let reference: [Setting]
    let value: Value
    /// Reads its settings; nil when a required one is missing or wrong (the reader has recorded
    /// the error).
    let parse: @Sendable (SensorSettingsReader) -> (any SensorKindConfig)?
}

/// The keys of one `sensors[]` item, as a kind's `parse` reads them: the mapping, and lines
/// recorded as they are read so the parser can check each exists and is used once.
final class SensorSettingsReader {
    private let mapping: ConfigMapping
    private let chip: String?
    private(set) var lines: [(key: String, reference: LineReference)] = []

    init(mapping: ConfigMapping) {
        self.mapping = mapping
        chip = mapping["chip"]?.nonEmptyString()
    }

    subscript(key: String) -> ConfigNode? { mapping[key] }

    /// The line named under `key` (required), on the sensor's `chip`.
    func line(_ key: String) -> LineReference? {
        guard let reference = mapping.required(key)?.nonEmptyString().map({ LineReference(name: $0, chip: chip) })
        else { return nil }
        lines.append((key, reference))
        return reference
    }

    /// The input line named under `key`, with the sensor's `bias`, `active_low` and `debounce`.
    func input(_ key: String) -> InputLineConfig? {
        guard let reference = line(key) else { return nil }
        return InputLineConfig(
            line: reference, bias: mapping["bias"]?.choice(LineBias.self) ?? ConfigDefaults.bias,
            activeLow: mapping["active_low"]?.bool() ?? ConfigDefaults.activeLow,
            debounce: mapping["debounce"]?.duration(in: .zero...(.seconds(10))) ?? ConfigDefaults.debounce)
    }

    /// The keys every input kind has beside its line.
    static let inputSettings = ["line", "bias", "active_low", "debounce"]
}
