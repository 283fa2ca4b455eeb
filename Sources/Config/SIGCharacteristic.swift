import BluetoothCore

/// SIG-defined characteristics whose value format gattway knows, so a configuration may leave
/// out `format`, `exponent` and `unit` for them (GATT Specification Supplement, section 3).
public struct SIGCharacteristic: Sendable, Hashable {
    public let uuid: BluetoothUUID
    public let name: String
    public let format: CharacteristicFormat
    public let unit: UInt16

    public static let known: [SIGCharacteristic] = [
        SIGCharacteristic(uuid: BluetoothUUID(0x2A19), name: "Battery Level",
                          format: .unsigned(bits: 8, exponent: 0), unit: GATTUnitName.percent),
        SIGCharacteristic(uuid: BluetoothUUID(0x2A6C), name: "Elevation",
                          format: .signed(bits: 24, exponent: -2), unit: GATTUnitName.metre),
        SIGCharacteristic(uuid: BluetoothUUID(0x2A6D), name: "Pressure",
                          format: .unsigned(bits: 32, exponent: -1), unit: GATTUnitName.pascal),
        SIGCharacteristic(uuid: BluetoothUUID(0x2A6E), name: "Temperature",
                          format: .signed(bits: 16, exponent: -2), unit: GATTUnitName.celsius),
        SIGCharacteristic(uuid: BluetoothUUID(0x2A6F), name: "Humidity",
                          format: .unsigned(bits: 16, exponent: -2), unit: GATTUnitName.percent),
    ]

    public static func named(_ uuid: BluetoothUUID) -> SIGCharacteristic? {
        known.first { $0.uuid == uuid }
    }
}

/// GATT unit names accepted in `unit:` (Assigned Numbers, section 3.5).
public enum GATTUnitName {
    public static let unitless: UInt16 = 0x2700
    public static let metre: UInt16 = 0x2701
    public static let pascal: UInt16 = 0x2724
    public static let celsius: UInt16 = 0x272F
    public static let percent: UInt16 = 0x27AD

    public static let all: [(name: String, unit: UInt16)] = [
        ("unitless", unitless), ("metre", metre), ("kilogram", 0x2702), ("second", 0x2703),
        ("ampere", 0x2704), ("kelvin", 0x2705), ("metre_per_second", 0x2712), ("hertz", 0x2722),
        ("pascal", pascal), ("joule", 0x2725), ("watt", 0x2726), ("volt", 0x2728),
        ("celsius", celsius), ("lux", 0x2731), ("minute", 0x2760), ("hour", 0x2761),
        ("degree", 0x2763), ("percent", percent),
    ]

    public static func unit(named name: String) -> UInt16? {
        all.first { $0.name == name }?.unit
    }
}
