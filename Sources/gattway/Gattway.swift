import ArgumentParser
import Config

@main
struct Gattway: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gattway",
        abstract: "A Bluetooth LE sensor gateway: GPIO sensors served as GATT characteristics and mirrored to MQTT.",
        version: GattwayVersion.current,
        subcommands: [
            RunCommand.self, CheckCommand.self, LinesCommand.self, DemoCommand.self,
            ConfigReferenceCommand.self, BondsCommand.self, StatusCommand.self, ReloadCommand.self,
            PairCommand.self
        ])
}
