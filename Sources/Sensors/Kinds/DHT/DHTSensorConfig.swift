import ConfigReading
import GPIO
import Values

/// DHT22 / DHT11 temperature (°C) and humidity (%), read every `interval`.
public struct DHTSensorConfig: SensorKindConfig {
    public var model: DHTSettings.Model
    public var line: LineReference
    public var interval: Duration

    public init(model: DHTSettings.Model, line: LineReference, interval: Duration) {
        self.model = model
        self.line = line
        self.interval = interval
    }

    public var name: String { model.rawValue }
    public var readings: [SensorReading] { [.temperature, .humidity] }
    public var lines: [LineReference] { [line] }
    public var bthomeObjects: [(reading: SensorReading, object: BTHomeObject)] {
        [(.temperature, .temperature), (.humidity, .humidity)]
    }

    public func sensorSettings(
        line resolve: (LineReference) -> LineSelector, stateDirectory: String
    ) -> (
        settings: any SensorKindSettings, lineFilters: [SensorFilter]
    ) {
        (DHTSettings(model: model, line: resolve(line), interval: interval), [])
    }

    static let defaultInterval = Duration.seconds(10)
    /// The sensors need at least this long between reads.
    static let minimumInterval = Duration.seconds(2)

    static let dht22 = definition(.dht22)
    static let dht11 = definition(.dht11)

    private static func definition(_ model: DHTSettings.Model) -> SensorKindDescription {
        SensorKindDescription(
            name: model.rawValue, settings: ["line", "interval"],
            reference: [
                .init(
                    key: "interval", type: "duration", defaultValue: DurationText.format(defaultInterval),
                    meaning: "time between measurements (at least \(DurationText.format(minimumInterval)), "
                        + "the sensor's own limit).")
            ],
            value: .numeric,
            parse: { reader in
                let interval = reader["interval"]?.duration(in: minimumInterval...(.seconds(3600))) ?? defaultInterval
                return reader.line("line").map { DHTSensorConfig(model: model, line: $0, interval: interval) }
            })
    }
}
