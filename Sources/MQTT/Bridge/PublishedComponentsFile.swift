import StateFile

/// The record of the components the mirror's Home Assistant device documents published
/// (`<state_dir>/homeassistant-discovery`: a line `device`, then `<platform> <id>` per component).
/// Its absence means the per-entity discovery is still to migrate.
struct PublishedComponentsFile {
    static let fileName = "homeassistant-discovery"
    let path: String

    init(stateDirectory: String) {
        path = stateDirectory + "/" + Self.fileName
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

    /// Replaces the record through `StateFile` (a crash leaves the old record or the new one).
    func save(_ components: Set<HomeAssistantComponent>) throws(StateFileError) {
        let text = (["device"] + components.sorted().map { "\($0.platform) \($0.id)" }).joined(separator: "\n") + "\n"
        try StateFile.write(Array(text.utf8), to: path, mode: 0o644)
    }
}
