/// Every sensor kind gattway has, in the order the reference and error messages list them.
/// A new kind is one folder under `Kinds/` (its schema, settings and engine) plus one line here.
public enum SensorKinds {
    public static let all: [SensorKindDescription] = [
        BinarySensorConfig.definition,
        CounterSensorConfig.definition,
        RateSensorConfig.definition,
        TachometerSensorConfig.definition,
        PulseWidthSensorConfig.definition,
        DistanceSensorConfig.definition,
        DHTSensorConfig.dht22, DHTSensorConfig.dht11,
        RotaryEncoderSensorConfig.definition,
        OutputSensorConfig.definition
    ]

    public static func named(_ name: String) -> SensorKindDescription? {
        all.first { $0.name == name }
    }
}
