import ArgumentParser
import Config
import Gateway

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the gateway on simulated sensors with the demo configuration.",
        discussion: """
            Runs the demo configuration (simulated GPIO, a virtual controller over TCP, a local MQTT \
            broker) through the same path as `gattway run`, until Ctrl-C.
            """)

    @Option(name: .long, help: ArgumentHelp("The demo configuration file.", valueName: "file"))
    var config = "deploy/config/demo.yaml"

    @OptionGroup var runtime: RuntimeOptions

    func run() async throws {
        GatewayLogHandler.bootstrap(level: runtime.logLevel)
        let loaded = try loadConfigOrExit(config)
        try await runGateway(loaded, runtime: runtime)
    }
}
