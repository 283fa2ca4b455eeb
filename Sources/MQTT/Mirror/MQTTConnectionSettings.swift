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

/// TLS settings (`mqtt.tls`); their presence turns TLS on (what an `mqtts://` broker URL means).
public struct MQTTTLSConfiguration: Sendable, Hashable {
    /// PEM file of the CA(s) the broker certificate must chain to; nil uses the system store.
    public var caFile: String?
    /// Client certificate and key (PEM) for brokers that require client authentication.
    public var certificateFile: String?
    public var keyFile: String?
    /// Verify the broker certificate and host name. On by default; turning it off is for lab
    /// setups only and is logged as a warning by the client.
    public var verifyPeer: Bool

    public init(
        caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil,
        verifyPeer: Bool = true
    ) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.verifyPeer = verifyPeer
    }
}
