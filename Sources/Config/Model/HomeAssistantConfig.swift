import Values

/// The Home Assistant entity a characteristic becomes through MQTT discovery.
public enum HomeAssistantDomain: String, Sendable, Hashable, CaseIterable {
    case sensor
    case binarySensor = "binary_sensor"
    case `switch`
    case text
    case number
    /// A button's presses (a `press` reading): Home Assistant's `event` entity.
    case event

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

    /// The domain's name after "a" or "an", as messages write it.
    public var withArticle: String { self == .event ? "an event" : "a \(rawValue)" }

    /// Home Assistant's device classes for the domain (Home Assistant 2026.2).
    public var deviceClasses: [String] {
        switch self {
        case .sensor: ["date", "enum", "timestamp"] + Self.measuredClasses
        case .number: Self.measuredClasses
        case .binarySensor:
            [
                "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas",
                "heat", "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power",
                "presence", "problem", "running", "safety", "smoke", "sound", "tamper", "update", "vibration",
                "window"
            ]
        case .switch: ["outlet", "switch"]
        case .event: ["button", "doorbell", "motion"]
        case .text: []
        }
    }

    /// `state_class` values; only sensors take one.
    public static let stateClasses = ["measurement", "measurement_angle", "total", "total_increasing"]

    private static let measuredClasses = [
        "absolute_humidity", "apparent_power", "aqi", "area", "atmospheric_pressure", "battery",
        "blood_glucose_concentration", "carbon_monoxide", "carbon_dioxide", "conductivity", "current", "data_rate",
        "data_size", "distance", "duration", "energy", "energy_distance", "energy_storage", "frequency", "gas",
        "humidity", "illuminance", "irradiance", "moisture", "monetary", "nitrogen_dioxide", "nitrogen_monoxide",
        "nitrous_oxide", "ozone", "ph", "pm1", "pm10", "pm25", "pm4", "power_factor", "power", "precipitation",
        "precipitation_intensity", "pressure", "reactive_energy", "reactive_power", "signal_strength",
        "sound_pressure", "speed", "sulphur_dioxide", "temperature", "temperature_delta",
        "volatile_organic_compounds", "volatile_organic_compounds_parts", "voltage", "volume", "volume_storage",
        "volume_flow_rate", "water", "weight", "wind_direction", "wind_speed"
    ]
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
