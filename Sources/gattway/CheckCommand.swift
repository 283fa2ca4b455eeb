import ArgumentParser
import Config
import GPIOLibgpiod
import Gateway

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Validate a configuration file.",
        discussion: """
            Reports every problem at once, each with its YAML path and line, and exits with status 1 \
            if there is any error. Otherwise prints warnings and a short summary of what would be \
            served, and exits with status 0. On a Raspberry Pi the sensors' GPIO lines are also \
            looked for on this machine's chips, and a line gattway run would not find is a warning.
            """)

    /// A setting printed alone, for scripts that must read the configuration as gattway does
    /// (the unit's adapter-release helper) rather than parse YAML themselves.
    enum Setting: String, CaseIterable, ExpressibleByArgument {
        /// `bluetooth.transport`, default included: `hci0`, `tcp:HOST:PORT`, `unix:PATH`, `serial:…`.
        case transport
        /// `device.id`, suffix included (the Raspberry Pi image names the host after it).
        case deviceID = "device-id"
    }

    @OptionGroup var file: ConfigFileOption

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Print only this setting of a valid configuration, as gattway reads it "
                + "(defaults included): transport, device-id.", valueName: "setting"))
    var print: Setting?

    func run() throws {
        let loaded = try loadConfigOrExit(file.config)
        if let setting = print {
            switch setting {
            case .transport: Swift.print(loaded.config.bluetooth.transport)
            case .deviceID: Swift.print(loaded.config.device.id)
            }
            return
        }
        for warning in loaded.warnings.map(\.description) + Self.lineProblemsOnThisPi(loaded.config) {
            printToStandardError("warning: \(warning)")
        }
        Swift.print("\(file.config): OK")
        for line in ConfigSummary.lines(loaded.config) {
            Swift.print("  \(line)")
        }
    }

    /// The lines `gattway run` would not find here, when here is a Raspberry Pi: elsewhere the
    /// file is being checked for another machine.
    private static func lineProblemsOnThisPi(_ config: GatewayConfig) -> [String] {
        guard config.gpio.backend == .libgpiod else { return [] }
        let backend = LibgpiodBackend()
        guard backend.board != nil else { return [] }
        return SensorLineCheck.problems(config, on: backend)
    }
}
