import Config
import Notify
import Sensors
import Values

/// Where a value goes and what it becomes there: a sensor's reading names the characteristics
/// that carry it, and a value becomes a characteristic's bytes in its format. Pure: the first
/// stage of the `ValuePipeline`, tested on its own.
struct ValueRouter {
    /// The characteristics carrying one channel of a sensor, in configuration order.
    struct ChannelRoute {
        let sensor: String
        let channel: String
        var refs: [CharacteristicRef]
    }

    /// Each characteristic's encoding, in a table of its own: a look-up copies its entry, and an
    /// entry with the output's name beside it retained and released that string for every value.
    private let encodings: CharacteristicTable<ValueEncoding>
    /// The output sensor whose line each output's characteristic drives.
    private let outputSensors: CharacteristicTable<String>
    /// A list searched by sensor and channel, not a dictionary keyed by them: a gateway has a few
    /// sensors, and comparing a reading's two short names with theirs costs less than hashing one.
    private let routes: [ChannelRoute]
    /// The fixed and written values of the configuration, each in its characteristic's format.
    let configuredSamples: [CharacteristicRef: NotifySample]

    init(layout: GATTLayout) {
        encodings = CharacteristicTable(layout.characteristics.lazy.map { ($0, $1.config.encoding) })
        outputSensors = CharacteristicTable(
            layout.characteristics.lazy.compactMap { ref, characteristic in characteristic.outputSensor.map { (ref, $0) } })
        var routes: [ChannelRoute] = []
        var configured: [CharacteristicRef: NotifySample] = [:]
        for (ref, characteristic) in layout.characteristics {
            switch characteristic.config.source {
            case .sensor(let id, let reading):
                if let position = routes.firstIndex(where: { $0.sensor == id && $0.channel == reading.rawValue }) {
                    routes[position].refs.append(ref)
                } else {
                    routes.append(ChannelRoute(sensor: id, channel: reading.rawValue, refs: [ref]))
                }
            case .fixed(let value), .written(let value):
                // Checked against the encoding by the configuration layer.
                configured[ref] = try? NotifySample(value, encoding: characteristic.config.encoding)
            case .mqtt:
                break
            }
        }
        self.routes = routes.map { ChannelRoute(sensor: $0.sensor, channel: $0.channel, refs: $0.refs.sorted()) }
        configuredSamples = configured
    }

    /// The characteristics that carry `channel` of `sensor`; nil when none does.
    func characteristics(carrying sensor: String, channel: String) -> [CharacteristicRef]? {
        route(carrying: sensor, channel: channel).map { routes[$0].refs }
    }

    /// The route of `channel` of `sensor` (its place among the routes), for the event path: its
    /// characteristics are then read one by one (`characteristic(at:on:)`), not as a list.
    func route(carrying sensor: String, channel: String) -> Int? {
        routes.firstIndex { $0.sensor == sensor && $0.channel == channel }
    }

    /// The positions of `route`'s characteristics.
    func characteristicPositions(on route: Int) -> Range<Int> { routes[route].refs.indices }

    /// The characteristic at `position` on `route`.
    func characteristic(at position: Int, on route: Int) -> CharacteristicRef { routes[route].refs[position] }

    /// The characteristics that carry any channel of `sensor` (its readings, presses excepted:
    /// an event is not a state that goes stale), in order.
    func characteristics(carrying sensor: String) -> [CharacteristicRef] {
        routes.filter { $0.sensor == sensor && $0.channel != SensorReading.press.rawValue }.flatMap(\.refs).sorted()
    }

    /// The encoding of `ref`'s values; nil when the layout has no such characteristic.
    ///
    /// Only the encoding comes out: a method that encoded too, called on the pipeline's router (a
    /// property of an actor), copied the whole router, four references retained and released,
    /// for every value.
    @inline(__always)
    func encoding(of ref: CharacteristicRef) -> ValueEncoding? { encodings[ref] }

    /// `value` in `encoding`'s format.
    static func sample(_ value: SensorValue, encoding: ValueEncoding) throws(ValueError) -> NotifySample {
        try NotifySample(adapt(value, to: encoding.format), encoding: encoding)
    }

    /// The output sensor whose line a value of `ref` drives, when `ref` is an output's.
    func outputSensor(of ref: CharacteristicRef) -> String? { outputSensors[ref] }

    /// A sensor's reading as the value its characteristics take; nil for a reading that failed.
    static func value(of reading: SensorSample.Reading) -> SensorValue? {
        switch reading {
        case .number(let number): .number(number)
        case .bool(let flag): .bool(flag)
        case .failure: nil
        }
    }

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
