/// Everything that can go wrong talking to the broker, phrased for the person reading the log.
public enum MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Nothing listens on the broker's address (TCP connection refused).
    case connectionRefused(host: String, port: Int)
    /// The broker rejected the username/password (or the client is not allowed to connect).
    case notAuthorized(String)
    /// The broker's certificate does not verify against the configured CA.
    case tlsVerificationFailed(String)
    /// Any other TLS failure (bad certificate file, handshake error).
    case tls(String)
    /// The broker answered CONNECT with another refusal reason.
    case brokerRefused(code: Int, reason: String)
    /// Network error while connecting or connected (host unreachable, connection lost, DNS).
    case network(String)
    case invalidConfiguration(String)
    case passwordUnavailable(String)
    /// A publish or subscribe was attempted while no connection is up.
    case notConnected
    case requestFailed(String)

    public var description: String {
        switch self {
        case .connectionRefused(let host, let port):
            "cannot connect to MQTT broker at \(host):\(port): connection refused (is the broker running?)"
        case .notAuthorized(let detail):
            "MQTT broker refused the connection: not authorized (\(detail)); check username and password"
        case .tlsVerificationFailed(let detail):
            "TLS verification of the MQTT broker failed: \(detail); check mqtt.tls ca and the broker certificate"
        case .tls(let detail):
            "TLS error with the MQTT broker: \(detail)"
        case .brokerRefused(let code, let reason):
            "MQTT broker refused the connection: \(reason) (reason code \(code))"
        case .network(let detail):
            "MQTT network error: \(detail)"
        case .invalidConfiguration(let detail):
            "invalid MQTT configuration: \(detail)"
        case .passwordUnavailable(let detail):
            "MQTT password unavailable: \(detail)"
        case .notConnected:
            "not connected to the MQTT broker"
        case .requestFailed(let detail):
            "MQTT request failed: \(detail)"
        }
    }
}

public enum MQTTQoS: Int32, Sendable, Equatable, Codable {
    case atMostOnce = 0
    case atLeastOnce = 1
    case exactlyOnce = 2
}

/// One MQTT application message, inbound or outbound.
public struct MQTTMessage: Sendable, Equatable, Codable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, text: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }

    /// The payload as UTF-8 text, nil when it is not valid UTF-8.
    public var text: String? { String(validating: payload, as: UTF8.self) }
}
