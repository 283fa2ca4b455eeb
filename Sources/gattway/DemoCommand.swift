import ArgumentParser
import Config
import Gateway
import Logging
import ServiceLifecycle

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the gateway on simulated sensors with the demo configuration.",
        discussion: """
            Starts a private mosquitto on the configuration's broker port (loopback only), runs the \
            demo configuration (simulated GPIO sensors) through the same path as `gattway run`, and \
            prints every message under the base topic as `mqtt <topic> <payload>`, until Ctrl-C. \
            The Bluetooth side (virtual controller and phone view) needs the BLE host, which this \
            build does not have yet.
            """)

    @Option(name: .long, help: ArgumentHelp("The demo configuration file.", valueName: "file"))
    var config = "deploy/config/demo.yaml"

    @OptionGroup var runtime: RuntimeOptions

    func run() async throws {
        GatewayLogHandler.bootstrap(level: runtime.logLevel)
        let loaded = try loadConfigOrExit(config)
        let logger = Logger(label: "demo")
        var companions: [any Service] = []
        var broker: DemoBroker?
        if let mqtt = runtime.apply(to: loaded.config).mqtt {
            do {
                broker = try DemoBroker(port: mqtt.broker.port)
                companions.append(try MQTTTrafficView(host: mqtt.broker.host, port: Int(mqtt.broker.port),
                                                      baseTopic: mqtt.baseTopic, logger: logger))
            } catch {
                printToStandardError("gattway demo: \(error)")
                throw ExitCode(69)
            }
        }
        defer { broker?.stop() }
        logger.warning("no BLE host in this build: the virtual controller and the phone view are not started")
        try await runGateway(loaded, runtime: runtime, companions: companions)
    }
}
