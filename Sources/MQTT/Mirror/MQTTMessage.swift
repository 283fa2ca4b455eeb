import FoundationEssentials

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

/// A message the broker publishes on our behalf when the connection dies without a DISCONNECT.
public struct MQTTWill: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    public var qos: MQTTQoS
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: MQTTQoS = .atLeastOnce, retain: Bool = true) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }
}
