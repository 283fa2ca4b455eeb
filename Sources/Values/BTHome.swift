import BluetoothCore

/// BTHome v2 objects gattway can advertise (https://bthome.io/format/): each an object id and
/// a little-endian integer of fixed size, signedness and scale.
public enum BTHomeObject: String, Sendable, Hashable, CaseIterable {
    case battery
    case temperature
    case humidity
    case pressure
    case illuminance
    case count8 = "count"
    case energy
    case power
    case voltage
    case opening
    case co2
    case moisture
    case door
    case moistureDetected = "moisture_binary"
    case motion
    case window
    case count16
    case count32
    case uvIndex = "uv_index"
    case speed
    case genericBoolean = "generic_boolean"
    case distance

    /// The object id; BTHome requires objects in ascending id order.
    public var id: UInt8 {
        switch self {
        case .battery: 0x01
        case .temperature: 0x02
        case .humidity: 0x03
        case .pressure: 0x04
        case .illuminance: 0x05
        case .count8: 0x09
        case .energy: 0x0A
        case .power: 0x0B
        case .voltage: 0x0C
        case .genericBoolean: 0x0F
        case .opening: 0x11
        case .co2: 0x12
        case .moisture: 0x14
        case .door: 0x1A
        case .moistureDetected: 0x20
        case .motion: 0x21
        case .window: 0x2D
        case .count16: 0x3D
        case .count32: 0x3E
        case .distance: 0x40
        case .speed: 0x44
        case .uvIndex: 0x46
        }
    }

    /// Binary sensors carry one byte, 0 or 1, and take a boolean.
    public var isBinary: Bool {
        switch self {
        case .genericBoolean, .opening, .door, .moistureDetected, .motion, .window: true
        default: false
        }
    }

    /// Size, signedness and decimal exponent of the numeric objects (binary: uint8, 0).
    var layout: (format: ValueFormat, exponent: Int8) {
        switch self {
        case .battery, .count8: (.uint8, 0)
        case .temperature: (.sint16, -2)
        case .humidity, .moisture, .speed: (.uint16, -2)
        case .pressure, .illuminance, .power: (.uint24, -2)
        case .energy: (.uint24, -3)
        case .voltage: (.uint16, -3)
        case .co2, .count16: (.uint16, 0)
        case .count32: (.uint32, 0)
        case .uvIndex: (.uint8, -1)
        // Distance in millimetres; values are given in metres, as gattway's sensors report them.
        case .distance: (.uint16, -3)
        case .genericBoolean, .opening, .door, .moistureDetected, .motion, .window: (.uint8, 0)
        }
    }

    /// The unit BTHome reports the object in.
    public var unitSymbol: String {
        switch self {
        case .battery, .humidity, .moisture: "%"
        case .temperature: "°C"
        case .pressure: "hPa"
        case .illuminance: "lx"
        case .energy: "kWh"
        case .power: "W"
        case .voltage: "V"
        case .co2: "ppm"
        case .speed: "m/s"
        case .distance: "m"
        default: ""
        }
    }
}

/// One value to advertise.
public struct BTHomeMeasurement: Sendable, Hashable {
    public let object: BTHomeObject
    public let value: SensorValue

    public init(_ object: BTHomeObject, _ value: SensorValue) {
        self.object = object
        self.value = value
    }

    /// Object id then the value's bytes.
    public func bytes() throws(ValueError) -> [UInt8] {
        let payload: [UInt8]
        if object.isBinary {
            guard case .bool(let flag) = value else { throw .wrongType(expected: .bool, got: value.kindName) }
            payload = [flag ? 1 : 0]
        } else {
            let layout = object.layout
            payload = try ValueEncoding(integer: layout.format, exponent: layout.exponent).encode(value)
        }
        return [object.id] + payload
    }
}

/// BTHome v2 service data (https://bthome.io/format/): service UUID 0xFCD2, a device
/// information byte, then the objects sorted by object id.
public enum BTHome {
    public static let serviceUUID = BluetoothUUID(0xFCD2)
    /// Device information: bits 5-7 version (2), bit 2 trigger-based, bit 0 encrypted (unused).
    static let version2: UInt8 = 0x40
    static let triggerBasedFlag: UInt8 = 0x04

    /// The service data after the UUID: device information byte and the sorted objects.
    public static func serviceData(
        _ measurements: [BTHomeMeasurement],
        triggerBased: Bool = false
    ) throws(ValueError) -> [UInt8] {
        // A stable sort keeps measurements of one object id in the order given.
        let sorted = measurements.enumerated()
            .sorted { ($0.element.object.id, $0.offset) < ($1.element.object.id, $1.offset) }
            .map(\.element)
        var bytes: [UInt8] = [version2 | (triggerBased ? triggerBasedFlag : 0)]
        for measurement in sorted {
            bytes += try measurement.bytes()
        }
        return bytes
    }

    /// The whole advertising structure: length, AD type 0x16 (Service Data - 16-bit UUID),
    /// UUID 0xFCD2 little-endian, service data.
    public static func advertisingStructure(
        _ measurements: [BTHomeMeasurement],
        triggerBased: Bool = false
    ) throws(ValueError) -> [UInt8] {
        let data = serviceUUID.attBytes + (try serviceData(measurements, triggerBased: triggerBased))
        guard data.count < 255 else { throw .tooLong(length: data.count, maximum: 254) }
        return [UInt8(truncatingIfNeeded: data.count + 1), 0x16] + data
    }
}
