/// Which MQTT protocol revision the client speaks (`mqtt.protocol`).
public enum MQTTProtocolVersion: String, Sendable, Hashable, CaseIterable {
    case v5 = "5"
    case v311 = "3.1.1"
}

/// Where the broker password comes from (`mqtt.password_file`, `mqtt.password_env`). It is never
/// stored in the configuration file itself and never appears in a log line or a `description`;
/// the client reads it when it connects (`resolve`).
public enum MQTTPasswordSource: Sendable, Hashable, CustomStringConvertible {
    /// A file whose first line is the password.
    case file(String)
    /// An environment variable holding the password.
    case environment(String)

    public var description: String {
        switch self {
        case .file(let path): "password from file \(path)"
        case .environment(let name): "password from $\(name)"
        }
    }
}
