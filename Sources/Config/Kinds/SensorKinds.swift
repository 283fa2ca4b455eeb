/// Every sensor kind gattway has, in the order the reference and error messages list them.
/// A new kind is one folder under `Kinds/` (and its engine's under `Sources/Sensors/Kinds/`)
/// plus one line here.
enum SensorKinds {
    static let all: [SensorKindDescription] = [
        BinarySensorConfig.definition,
        CounterSensorConfig.definition,
        RateSensorConfig.definition,
        PulseWidthSensorConfig.definition,
        DistanceSensorConfig.definition,
        DHTSensorConfig.dht22, DHTSensorConfig.dht11,
        RotaryEncoderSensorConfig.definition,
        OutputSensorConfig.definition
    ]

    static func named(_ name: String) -> SensorKindDescription? {
        all.first { $0.name == name }
    }
}
