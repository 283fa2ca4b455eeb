import Config

/// The messages loading `yaml` reports, in order; none when it loads.
func configurationErrors(_ yaml: String) -> [String] {
    do {
        _ = try ConfigLoader.load(yaml: yaml)
        return []
    } catch {
        return error.errors.map(\.description)
    }
}
