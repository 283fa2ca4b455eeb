import ArgumentParser
import Config
import DevelopmentHarness
import Gateway
import Logging
import ServiceLifecycle

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the gateway on simulated sensors with the demo configuration.",
        discussion: """
            The whole loop on a dev box. Starts a private mosquitto on the configuration's broker \
            port (loopback only) and the harness's virtual controller on the configured \
            tcp:127.0.0.1 port (Python with Bumble from GATTWAY_PYTHON or .venv/bin/python3), runs \
            the demo configuration (simulated GPIO sensors) through the same path as `gattway run`, \
            and prints a phone's view (a Bumble central that finds the gateway, subscribes to \
            everything and prints each notification as `phone …`) and the MQTT traffic under the \
            base topic (`mqtt <topic> <payload>`), until Ctrl-C stops them all.
            """)

    @Option(name: .long, help: ArgumentHelp("The demo configuration file.", valueName: "file"))
    var config = "deploy/config/demo.yaml"

    @OptionGroup var runtime: RuntimeOptions

    func run() async throws {
        GatewayLogHandler.bootstrap(level: runtime.logLevel.level)
        let loaded = try loadConfigOrExit(config)
        let logger = Logger(label: "demo")
        let config = runtime.apply(to: loaded.config)
        var companions: [any Service] = []
        var broker: DemoBroker?
        if let mqtt = config.mqtt {
            do {
                broker = try DemoBroker(port: mqtt.broker.port)
                companions.append(
                    try MQTTTrafficView(
                        host: mqtt.broker.host, port: Int(mqtt.broker.port),
                        baseTopic: mqtt.baseTopic, logger: logger))
            } catch {
                printToStandardError("gattway demo: \(error)")
                throw ExitCode(69)
            }
        }
        defer { broker?.stop() }
        // The radio: a virtual controller where the configuration expects one on this machine,
        // and a phone on it.
        var controller: DemoController?
        if case .tcp(let host, let port) = config.bluetooth.transport, ["127.0.0.1", "localhost"].contains(host) {
            do {
                let harness = try DemoHarness.locate()
                controller = try DemoController(harness: harness, port: port)
                companions.append(
                    DemoPhoneView(
                        harness: harness, controller: "tcp:\(host):\(port)",
                        name: config.bluetooth.advertising.localName))
            } catch {
                logger.warning("\(error)")
            }
        }
        defer { controller?.stop() }
        try await runGateway(loaded, runtime: runtime, companions: companions)
    }
}
