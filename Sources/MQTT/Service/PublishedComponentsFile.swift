import MQTTMirror
import StateFile

/// The record of the components the mirror's Home Assistant device documents published
/// (`<state_dir>/homeassistant-discovery`: a line `device <discovery prefix>`, `device -` with
/// discovery off, then `<platform> <id>` per component). Its absence means the per-entity discovery is still to
/// migrate.
struct PublishedComponentsFile {
    static let fileName = "homeassistant-discovery"
    let path: String
    private let writer: StateFileWriter

    init(stateDirectory: String, writer: StateFileWriter) {
        path = stateDirectory + "/" + Self.fileName
        self.writer = writer
    }

    /// The recorded components; nil when there is no record.
    func load() throws(StateFileError) -> Set<HomeAssistantComponent>? {
        guard let text = try StateFile.readValue(path) else { return nil }
        return Set(
            text.split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                return fields.count == 2 ? HomeAssistantComponent(platform: String(fields[0]), id: String(fields[1])) : nil
            })
    }

    /// The discovery prefix the recorded document was published under; nil when there is no
    /// record. A record of an earlier version names none: those published under the default.
    func loadPrefix() throws(StateFileError) -> String? {
        guard let text = try StateFile.readValue(path) else { return nil }
        let first = text.split(separator: "\n", omittingEmptySubsequences: false).first ?? ""
        let fields = first.split(separator: " ")
        guard fields.count == 2 else { return Self.defaultPrefix }
        return fields[1] == Self.noPrefix ? nil : String(fields[1])
    }

    /// The header's word for "discovery off": no document published.
    static let noPrefix = "-"

    static let defaultPrefix = "homeassistant"

    /// Replaces the record on the state files' writer thread (a crash leaves the old record or the
    /// new one), then calls `completion` there with nil or the error. `prefix`: the discovery
    /// prefix the components were published under.
    func save(
        _ components: Set<HomeAssistantComponent>, prefix: String? = nil,
        completion: @escaping StateFileWriter.Completion
    ) {
        let header = "device " + (prefix ?? Self.noPrefix)
        let text = ([header] + components.sorted().map { "\($0.platform) \($0.id)" }).joined(separator: "\n") + "\n"
        writer.write(Array(text.utf8), to: path, mode: 0o644, completion: completion)
    }
}
