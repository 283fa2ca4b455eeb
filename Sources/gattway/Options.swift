import ArgumentParser
import BluetoothHCI
import Config
import FoundationEssentials
import Glibc
import Logging

/// `--log-level`: swift-log's levels by their names. A type of our own, because conforming
/// swift-log's `Logger.Level` to ArgumentParser's protocol would be a retroactive conformance.
struct LogLevelArgument: ExpressibleByArgument {
    let level: Logger.Level

    init(_ level: Logger.Level) { self.level = level }

    init?(argument: String) {
        guard let level = Logger.Level(rawValue: argument) else { return nil }
        self.level = level
    }

    static var allValueStrings: [String] { Logger.Level.allCases.map(\.rawValue) }
    var defaultValueDescription: String { level.rawValue }
}

/// `--config FILE`, shared by the commands that read a configuration.
struct ConfigFileOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The YAML configuration file.", valueName: "file"))
    var config: String
}

/// The options that override the configuration when running the gateway.
struct RuntimeOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The Bluetooth controller, overriding bluetooth.transport: hciN (Linux HCI "
                + "user channel on adapter N), tcp:HOST:PORT or unix:PATH (H4 over a socket, "
                + "e.g. a virtual controller), serial:DEVICE[,BAUD] (H4 over a UART).",
            valueName: "transport"),
        transform: { text in try HCITransportSpec(parsing: text) })
    var hci: HCITransportSpec?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The MQTT broker, overriding mqtt.url (and turning the mirror on): "
                + "mqtt://HOST[:PORT] or mqtts://HOST[:PORT].", valueName: "url"),
        transform: { text in try MQTTBrokerURL(parsing: text) })
    var mqtt: MQTTBrokerURL?

    @Option(
        name: .long,
        help: ArgumentHelp("The lowest level logged.", valueName: "level"))
    var logLevel = LogLevelArgument(.info)

    /// The configuration with the command line's overrides applied.
    func apply(to config: GatewayConfig) -> GatewayConfig {
        var config = config
        if let hci { config.bluetooth.transport = hci }
        if let mqtt {
            if config.mqtt == nil {
                config.mqtt = MQTTConfig.defaults(broker: mqtt, deviceID: config.device.id)
            } else {
                config.mqtt?.broker = mqtt
            }
        }
        return config
    }
}

/// Loads a configuration, or prints every problem in it to stderr and exits with status 1.
func loadConfigOrExit(_ path: String) throws -> LoadedConfig {
    do {
        return try ConfigLoader.load(file: path)
    } catch {
        printToStandardError(error.description)
        throw ExitCode(1)
    }
}

func printToStandardError(_ text: String) {
    let bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}
