import BluetoothCore
import FoundationEssentials
import Glibc
import Logging
import MQTTClient
import MQTTMirror
import ServiceLifecycle

/// `gattway demo`'s view of the MQTT traffic: subscribes to `<base>/#` with gattway's own MQTT
/// client and prints every message as one line, `mqtt <topic> <payload>`, on stdout.
public struct MQTTTrafficView: Service {
    private let client: MQTTClient
    private let topic: String
    private let print: @Sendable (String) -> Void

    public init(
        host: String, port: Int, baseTopic: String, logger: Logger,
        print: @escaping @Sendable (String) -> Void = MQTTTrafficView.writeLine
    ) throws {
        client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: host, port: port, clientID: "gattway-demo-view-\(getpid())"), logger: logger)
        topic = "\(baseTopic)/#"
        self.print = print
    }

    /// One unbuffered write per line, so a pipe reader sees each message as it comes.
    public static let writeLine: @Sendable (String) -> Void = { line in
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }

    /// One line per message; payloads that are not UTF-8 print as hex, empty ones as `(cleared)`.
    public static func line(_ message: MQTTMessage) -> String {
        let payload =
            message.payload.isEmpty
            ? "(cleared)"
            : message.text ?? message.payload.hexString
        return "mqtt \(message.topic) \(payload)"
    }

    /// Prints on the event loop, in the client's call, one line per message as the logger writes
    /// its lines there.
    public func run() async throws {
        let (client, topic, print) = (client, topic, print)
        client.start { event in
            switch event {
            case .connected(let connection):
                _ = try? client.subscribe(topic, on: connection)
            case .message(let message):
                print(Self.line(message))
            case .disconnected, .connectionFailed, .delivered, .caughtUp:
                break
            }
        }
        try? await gracefulShutdown()
        await client.stop()
    }
}
