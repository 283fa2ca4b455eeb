import Config
import Notify
import Values

/// Where a value goes and what it becomes there: a sensor's reading names the characteristics
/// that carry it, and a value becomes a characteristic's bytes in its format. Pure: the first
/// stage of the `ValuePipeline`, tested on its own.
struct ValueRouter {
    struct SensorRoute: Hashable {
        let sensor: String
        let channel: String
    }

    private let characteristics: [CharacteristicRef: GATTLayout.Characteristic]
    /// (sensor id, channel) → the characteristics carrying that reading, in configuration order.
    private let sensorRoutes: [SensorRoute: [CharacteristicRef]]
    /// The fixed and written values of the configuration, each in its characteristic's format.
    let configuredSamples: [CharacteristicRef: NotifySample]

    init(layout: GATTLayout) {
        characteristics = layout.characteristics
        var routes: [SensorRoute: [CharacteristicRef]] = [:]
        var configured: [CharacteristicRef: NotifySample] = [:]
        for (ref, characteristic) in layout.characteristics {
            switch characteristic.config.source {
            case .sensor(let id, let reading):
                routes[SensorRoute(sensor: id, channel: reading.rawValue), default: []].append(ref)
            case .fixed(let value), .written(let value):
                // Checked against the encoding by the configuration layer.
                configured[ref] = try? NotifySample(value, encoding: characteristic.config.encoding)
            case .mqtt:
                break
            }
        }
        sensorRoutes = routes.mapValues { $0.sorted() }
        configuredSamples = configured
    }

    /// The characteristics that carry `channel` of `sensor`; nil when none does.
    func characteristics(carrying sensor: String, channel: String) -> [CharacteristicRef]? {
        sensorRoutes[SensorRoute(sensor: sensor, channel: channel)]
    }

    /// `value` in the format of `ref`; nil when the layout has no such characteristic.
    func sample(_ value: SensorValue, for ref: CharacteristicRef) throws(ValueError) -> NotifySample? {
        guard let encoding = characteristics[ref]?.config.encoding else { return nil }
        return try NotifySample(Self.adapt(value, to: encoding.format), encoding: encoding)
    }

    /// The output sensor whose line a value of `ref` drives, when `ref` is an output's.
    func outputSensor(of ref: CharacteristicRef) -> String? { characteristics[ref]?.outputSensor }

    /// Booleans on numeric characteristics are 0 and 1; numbers on boolean ones are "non-zero".
    static func adapt(_ value: SensorValue, to format: ValueFormat) -> SensorValue {
        switch (value, format) {
        case (.bool(let flag), _) where format.isNumeric: .number(flag ? 1 : 0)
        case (.number(let number), .bool): .bool(number != 0)
        default: value
        }
    }

    /// The level an output's line takes for `value`; nil when it is no boolean (text).
    static func outputLevel(_ value: SensorValue) -> Bool? {
        adapt(value, to: .bool).numericValue.map { $0 != 0 }
    }
}
