/// The Home Assistant entity a characteristic becomes through MQTT discovery (its platform, the
/// `p` of a device document's component), and what Home Assistant accepts of each.
public enum HomeAssistantDomain: String, Sendable, Hashable, CaseIterable {
    case sensor
    case binarySensor = "binary_sensor"
    /// An output: state from the value topic, commands to the `/set` topic.
    case `switch`
    /// A writable utf8 characteristic: text from the value topic, edits to `/set`.
    case text
    /// A writable numeric characteristic: within the format's range, in steps of its resolution.
    case number
    /// A button's presses (a `press` reading): Home Assistant's `event` entity, each value an
    /// event code (`HomeAssistantEntity.eventTypes`), also offered as device triggers.
    case event

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
