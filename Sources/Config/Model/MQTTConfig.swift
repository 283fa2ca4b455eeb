import MQTTMirror

public struct MQTTConfig: Sendable, Hashable {
    public var broker: MQTTBrokerURL
    public var clientID: String
    public var username: String?
    /// Where the password comes from; the password itself never appears in the configuration.
    public var password: MQTTPasswordSource?
    public var tls: MQTTTLSConfiguration?
    public var baseTopic: String
    public var qos: Int
    public var retain: Bool
    /// Home Assistant discovery topic prefix; nil turns discovery off.
    public var discoveryPrefix: String?
    public var protocolVersion: MQTTProtocolVersion
    public var keepalive: Duration
    public var payload: MirrorPayloadStyle
    /// Most QoS 1 events kept while the broker is unreachable.
    public var outboxLimit: Int

    public init(
        broker: MQTTBrokerURL, clientID: String, username: String?, password: MQTTPasswordSource?,
        tls: MQTTTLSConfiguration?, baseTopic: String, qos: Int, retain: Bool,
        discoveryPrefix: String?, protocolVersion: MQTTProtocolVersion, keepalive: Duration,
        payload: MirrorPayloadStyle, outboxLimit: Int
    ) {
        self.broker = broker
        self.clientID = clientID
        self.username = username
        self.password = password
        self.tls = tls
        self.baseTopic = baseTopic
        self.qos = qos
        self.retain = retain
        self.discoveryPrefix = discoveryPrefix
        self.protocolVersion = protocolVersion
        self.keepalive = keepalive
        self.payload = payload
        self.outboxLimit = outboxLimit
    }
}

extension MQTTConfig {
    /// An MQTT section with every default, for `--mqtt` on a configuration without one.
    public static func defaults(broker: MQTTBrokerURL, deviceID: String) -> MQTTConfig {
        typealias D = ConfigDefaults
        return MQTTConfig(
            broker: broker, clientID: D.mqttClientID(deviceID: deviceID), username: nil,
            password: nil, tls: nil, baseTopic: D.mqttBaseTopic, qos: D.mqttQoS,
            retain: D.mqttRetain, discoveryPrefix: D.mqttDiscovery ? D.mqttDiscoveryPrefix : nil,
            protocolVersion: D.mqttProtocol, keepalive: D.mqttKeepalive, payload: D.mqttPayload,
            outboxLimit: D.mqttOutboxLimit)
    }
}

/// `mqtt://host[:port]` or `mqtts://host[:port]` (TLS).
public struct MQTTBrokerURL: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: UInt16
    public var usesTLS: Bool

    public init(host: String, port: UInt16, usesTLS: Bool) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let text: String
        public let reason: String
        public var description: String {
            "\"\(text)\" is not a broker URL: \(reason) (expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT])"
        }
    }

    public init(parsing text: String) throws(ParseError) {
        func fail(_ reason: String) -> ParseError { ParseError(text: text, reason: reason) }
        let usesTLS: Bool
        let rest: Substring
        if text.hasPrefix("mqtt://") {
            usesTLS = false
            rest = text.dropFirst("mqtt://".count)
        } else if text.hasPrefix("mqtts://") {
            usesTLS = true
            rest = text.dropFirst("mqtts://".count)
        } else {
            throw fail("the scheme must be mqtt:// or mqtts://")
        }
        var host = rest
        var port: UInt16 = usesTLS ? 8883 : 1883
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { throw fail("unclosed [") }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = UInt16(after.dropFirst()), value > 0 else {
                    throw fail("the port must be 1-65535")
                }
                port = value
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard !host[..<colon].contains(":") else {
                throw fail("an IPv6 address goes in brackets, e.g. mqtt://[\(host)]:1883 or mqtt://[\(host)]")
            }
            guard let value = UInt16(host[host.index(after: colon)...]), value > 0 else {
                throw fail("the port must be 1-65535")
            }
            port = value
            host = host[..<colon]
        }
        guard !host.isEmpty else { throw fail("missing HOST") }
        guard !host.contains("/"), !host.contains("@"), !host.contains("?") else {
            throw fail("only a host and port are accepted (credentials go in username/password_file)")
        }
        self.init(host: String(host), port: port, usesTLS: usesTLS)
    }

    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(usesTLS ? "mqtts" : "mqtt")://\(shownHost):\(port)"
    }
}
