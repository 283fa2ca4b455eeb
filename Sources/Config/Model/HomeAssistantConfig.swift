import MQTTMirror
import Values

extension HomeAssistantDomain {
    /// Sensors as sensors, binary inputs as binary sensors, a button's presses as events, outputs
    /// as switches; what centrals
    /// write as text, number or switch after its format; nil for characteristics without an
    /// entity (fixed values, MQTT-sourced values, bytes).
    public static func of(_ characteristic: CharacteristicConfig, sensor: SensorConfig?) -> HomeAssistantDomain? {
        switch characteristic.source {
        case .sensor(_, let reading):
            guard let sensor else { return nil }
            if reading == .press { return .event }
            if sensor.kind.isOutput { return .switch }
            return sensor.kind.isBinary ? .binarySensor : .sensor
        case .written:
            guard characteristic.properties.isWritable else { return nil }
            switch characteristic.encoding.format {
            case .utf8: return .text
            case .bool: return .switch
            case .bytes: return nil
            default: return .number
            }
        case .mqtt, .fixed: return nil
        }
    }
}

/// `homeassistant:` of a characteristic: what gattway would announce, changed. Every field is
/// optional; what is left out keeps gattway's choice.
public struct HomeAssistantOverride: Sendable, Hashable {
    public var deviceClass: String?
    public var stateClass: String?
    public var unit: String?
    public var icon: String?
    public var expireAfter: Duration?
    public var name: String?
    /// false: the entity is created disabled.
    public var enabled: Bool?

    public init(
        deviceClass: String? = nil, stateClass: String? = nil, unit: String? = nil, icon: String? = nil,
        expireAfter: Duration? = nil, name: String? = nil, enabled: Bool? = nil
    ) {
        self.deviceClass = deviceClass
        self.stateClass = stateClass
        self.unit = unit
        self.icon = icon
        self.expireAfter = expireAfter
        self.name = name
        self.enabled = enabled
    }
}
