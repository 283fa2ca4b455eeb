/// Everything that can go wrong in the MQTT layers, phrased for the person reading the log: a
/// mirror configuration the model refuses, and each failure talking to the broker.
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
