import ArgumentParser
import Config

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file.",
        discussion: """
            Reports every problem at once, each with its YAML path and line, and exits with status 1 \
            if there is any error. Otherwise prints warnings and a short summary of what would be \
            served, and exits with status 0.
            """)

    @OptionGroup var file: ConfigFileOption

    func run() throws {
        let loaded = try loadConfigOrExit(file.config)
        for warning in loaded.warnings {
            printToStandardError("warning: \(warning)")
        }
        print("\(file.config): OK")
        for line in ConfigSummary.lines(loaded.config) {
            print("  \(line)")
        }
    }
}
