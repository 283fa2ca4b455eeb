import Config
import Notify
import Values

/// Where a value goes and what it becomes there: a sensor's reading names the characteristics
/// that carry it, and a value becomes a characteristic's bytes in its format. Pure: the first
/// stage of the `ValuePipeline`, tested on its own.
struct ValueRouter {
    /// The characteristics carrying one channel of a sensor, in configuration order.
    struct ChannelRoute {
        let channel: String
        var refs: [CharacteristicRef]
    }

    private let characteristics: [CharacteristicRef: GATTLayout.Characteristic]
    /// Sensor id → its routed channels. Keyed by the sensor alone: a reading's lookup hashes one
    /// name, and a sensor's few channels are told apart by comparing theirs.
    private let sensorRoutes: [String: [ChannelRoute]]
    /// The fixed and written values of the configuration, each in its characteristic's format.
    let configuredSamples: [CharacteristicRef: NotifySample]

    init(layout: GATTLayout) {
        characteristics = layout.characteristics
        var routes: [String: [ChannelRoute]] = [:]
        var configured: [CharacteristicRef: NotifySample] = [:]
        for (ref, characteristic) in layout.characteristics {
            switch characteristic.config.source {
            case .sensor(let id, let reading):
                if let position = routes[id]?.firstIndex(where: { $0.channel == reading.rawValue }) {
                    routes[id]![position].refs.append(ref)
                } else {
                    routes[id, default: []].append(ChannelRoute(channel: reading.rawValue, refs: [ref]))
                }
            case .fixed(let value), .written(let value):
                // Checked against the encoding by the configuration layer.
                configured[ref] = try? NotifySample(value, encoding: characteristic.config.encoding)
            case .mqtt:
                break
            }
        }
        sensorRoutes = routes.mapValues { channels in
            channels.map { ChannelRoute(channel: $0.channel, refs: $0.refs.sorted()) }
        }
        configuredSamples = configured
    }

    /// The characteristics that carry `channel` of `sensor`; nil when none does.
    func characteristics(carrying sensor: String, channel: String) -> [CharacteristicRef]? {
        sensorRoutes[sensor]?.first { $0.channel == channel }?.refs
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
