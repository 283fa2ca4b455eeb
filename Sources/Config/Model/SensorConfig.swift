import Sensors

public struct SensorConfig: Sendable, Hashable {
    /// Unique; characteristics name it in `source: {sensor: id}`.
    public var id: String
    /// What it measures, with its kind's settings (one type per kind, in Sources/Sensors/Kinds/).
    public var kind: any SensorKindConfig
    /// Applied in order to the sensor's value.
    public var filters: [SensorFilter]
    /// Also broadcast the sensor's readings as BTHome v2 service data (UUID 0xFCD2).
    public var bthome: Bool

    public init(id: String, kind: any SensorKindConfig, filters: [SensorFilter], bthome: Bool) {
        self.id = id
        self.kind = kind
        self.filters = filters
        self.bthome = bthome
    }

    public static func == (lhs: SensorConfig, rhs: SensorConfig) -> Bool {
        lhs.id == rhs.id && AnyHashable(lhs.kind) == AnyHashable(rhs.kind) && lhs.filters == rhs.filters
            && lhs.bthome == rhs.bthome
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(AnyHashable(kind))
        hasher.combine(filters)
        hasher.combine(bthome)
    }
}
