import ArgumentParser
import Config

struct ConfigReferenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config-reference",
        abstract: "Print every configuration key with its type, default and meaning, as a Markdown table.")

    func run() {
        print(ConfigReference.markdownTable())
    }
}
