import BluetoothCore

/// The SIG units a sensor gateway needs (Assigned Numbers, "Units", org.bluetooth.unit.*).
/// Raw values are the configuration names; `uuid` is what the Presentation Format carries.
public enum GATTUnit: String, Sendable, Hashable, CaseIterable {
    case unitless
    case metre
    case kilogram
    case second
    case ampere
    case kelvin
    case metresPerSecond = "metres_per_second"
    case metresPerSecondSquared = "metres_per_second_squared"
    case hertz
    case newton
    case pascal
    case joule
    case watt
    case volt
    case ohm
    case celsius
    case lux
    case minute
    case hour
    case day
    case degree
    case litre
    case bar
    case millimetreOfMercury = "millimetre_of_mercury"
    case kilometresPerHour = "kilometres_per_hour"
    case revolutionsPerMinute = "revolutions_per_minute"
    case kilowattHour = "kilowatt_hour"
    case fahrenheit
    case percent
    case perMille = "per_mille"
    case beatsPerMinute = "beats_per_minute"
    case ampereHours = "ampere_hours"
    case countPerCubicMetre = "count_per_cubic_metre"
    case wattsPerSquareMetre = "watts_per_square_metre"
    case litresPerSecond = "litres_per_second"
    case decibel
    case partsPerMillion = "parts_per_million"
    case partsPerBillion = "parts_per_billion"

    /// The 16-bit unit UUID.
    public var uuid16: UInt16 {
        switch self {
        case .unitless: 0x2700
        case .metre: 0x2701
        case .kilogram: 0x2702
        case .second: 0x2703
        case .ampere: 0x2704
        case .kelvin: 0x2705
        case .metresPerSecond: 0x2712
        case .metresPerSecondSquared: 0x2713
        case .hertz: 0x2722
        case .newton: 0x2723
        case .pascal: 0x2724
        case .joule: 0x2725
        case .watt: 0x2726
        case .volt: 0x2728
        case .ohm: 0x272A
        case .celsius: 0x272F
        case .lux: 0x2731
        case .minute: 0x2760
        case .hour: 0x2761
        case .day: 0x2762
        case .degree: 0x2763
        case .litre: 0x2767
        case .bar: 0x2780
        case .millimetreOfMercury: 0x2781
        case .kilometresPerHour: 0x27A6
        case .revolutionsPerMinute: 0x27A8
        case .kilowattHour: 0x27AB
        case .fahrenheit: 0x27AC
        case .percent: 0x27AD
        case .perMille: 0x27AE
        case .beatsPerMinute: 0x27AF
        case .ampereHours: 0x27B0
        case .countPerCubicMetre: 0x27B5
        case .wattsPerSquareMetre: 0x27B6
        case .litresPerSecond: 0x27C2
        case .decibel: 0x27C3
        case .partsPerMillion: 0x27C4
        case .partsPerBillion: 0x27C5
        }
    }

    public var uuid: BluetoothUUID { BluetoothUUID(uuid16) }

    /// The symbol shown to people (README, Home Assistant's unit_of_measurement).
    public var symbol: String {
        switch self {
        case .unitless: ""
        case .metre: "m"
        case .kilogram: "kg"
        case .second: "s"
        case .ampere: "A"
        case .kelvin: "K"
        case .metresPerSecond: "m/s"
        case .metresPerSecondSquared: "m/s²"
        case .hertz: "Hz"
        case .newton: "N"
        case .pascal: "Pa"
        case .joule: "J"
        case .watt: "W"
        case .volt: "V"
        case .ohm: "Ω"
        case .celsius: "°C"
        case .lux: "lx"
        case .minute: "min"
        case .hour: "h"
        case .day: "d"
        case .degree: "°"
        case .litre: "L"
        case .bar: "bar"
        case .millimetreOfMercury: "mmHg"
        case .kilometresPerHour: "km/h"
        case .revolutionsPerMinute: "rpm"
        case .kilowattHour: "kWh"
        case .fahrenheit: "°F"
        case .percent: "%"
        case .perMille: "‰"
        case .beatsPerMinute: "bpm"
        case .ampereHours: "Ah"
        case .countPerCubicMetre: "/m³"
        case .wattsPerSquareMetre: "W/m²"
        case .litresPerSecond: "L/s"
        case .decibel: "dB"
        case .partsPerMillion: "ppm"
        case .partsPerBillion: "ppb"
        }
    }

    public init?(uuid16: UInt16) {
        guard let unit = Self.allCases.first(where: { $0.uuid16 == uuid16 }) else { return nil }
        self = unit
    }
}

/// The Characteristic Presentation Format descriptor (0x2904, Core Vol 3 Part G 3.3.3.5):
/// format (1 byte), exponent (sint8), unit (UUID16), name space (1), description (UUID16) —
/// 7 bytes, little-endian.
public struct PresentationFormat: Sendable, Hashable {
    public static let descriptorUUID = BluetoothUUID(0x2904)
    /// Name space 0x01: the description is a Bluetooth SIG assigned number.
    public static let bluetoothSIGNamespace: UInt8 = 0x01
    /// Description 0x0000 in the SIG name space: "unknown" (no position such as "first").
    public static let unknownDescription: UInt16 = 0x0000

    public var formatCode: UInt8
    public var exponent: Int8
    public var unit: UInt16
    public var namespace: UInt8
    public var descriptionCode: UInt16

    public init(
        formatCode: UInt8, exponent: Int8, unit: UInt16,
        namespace: UInt8 = PresentationFormat.bluetoothSIGNamespace,
        descriptionCode: UInt16 = PresentationFormat.unknownDescription
    ) {
        self.formatCode = formatCode
        self.exponent = exponent
        self.unit = unit
        self.namespace = namespace
        self.descriptionCode = descriptionCode
    }

    /// The descriptor of a characteristic encoded with `encoding` in `unit`.
    public init(
        _ encoding: ValueEncoding, unit: GATTUnit,
        descriptionCode: UInt16 = PresentationFormat.unknownDescription
    ) {
        self.init(
            formatCode: encoding.format.presentationFormatCode, exponent: encoding.exponent,
            unit: unit.uuid16, descriptionCode: descriptionCode)
    }

    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 7)
        writer.write(formatCode)
        writer.write(UInt8(bitPattern: exponent))
        writer.write(unit)
        writer.write(namespace)
        writer.write(descriptionCode)
        return writer.bytes
    }

    /// Parses the 7-byte descriptor value.
    public init(bytes: [UInt8]) throws(ValueError) {
        guard bytes.count == 7 else { throw .wrongLength(format: .bytes, expected: 7, got: bytes.count) }
        self.init(
            formatCode: bytes[0], exponent: Int8(bitPattern: bytes[1]),
            unit: UInt16(bytes[2]) | UInt16(bytes[3]) << 8, namespace: bytes[4],
            descriptionCode: UInt16(bytes[5]) | UInt16(bytes[6]) << 8)
    }
}

/// The Characteristic User Description descriptor (0x2901, Core Vol 3 Part G 3.3.3.2): the
/// characteristic's name as UTF-8, no terminator.
public enum UserDescription {
    public static let descriptorUUID = BluetoothUUID(0x2901)

    /// The descriptor value for `text`; too long for an attribute value is an error.
    public static func bytes(_ text: String) throws(ValueError) -> [UInt8] {
        let bytes = Array(text.utf8)
        guard bytes.count <= ValueEncoding.attributeValueLimit else {
            throw .tooLong(length: bytes.count, maximum: ValueEncoding.attributeValueLimit)
        }
        return bytes
    }
}

/// A descriptor's UUID and value, as the GATT database takes them.
public struct DescriptorValue: Sendable, Hashable {
    public let uuid: BluetoothUUID
    public let value: [UInt8]

    public init(uuid: BluetoothUUID, value: [UInt8]) {
        self.uuid = uuid
        self.value = value
    }
}

/// The descriptors every characteristic carrying a sensor gets.
public enum SensorDescriptors {
    /// User Description (the name), Presentation Format (encoding and unit) and, for
    /// Environmental Sensing characteristics, the ES Measurement descriptor — in that order.
    public static func make(
        name: String, encoding: ValueEncoding, unit: GATTUnit,
        measurement: ESMeasurement? = nil
    ) throws(ValueError) -> [DescriptorValue] {
        var descriptors = [
            DescriptorValue(uuid: UserDescription.descriptorUUID, value: try UserDescription.bytes(name)),
            DescriptorValue(
                uuid: PresentationFormat.descriptorUUID,
                value: PresentationFormat(encoding, unit: unit).bytes)
        ]
        if let measurement {
            descriptors.append(DescriptorValue(uuid: ESMeasurement.descriptorUUID, value: measurement.bytes))
        }
        return descriptors
    }
}
