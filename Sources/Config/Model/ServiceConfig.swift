import BluetoothCore
import Notify
import Sensors
import Values

public struct ServiceConfig: Sendable, Hashable {
    public var uuid: BluetoothUUID
    /// Used in MQTT topics and by `includes`; nil for an unnamed service (topics use the UUID).
    public var name: String?
    public var primary: Bool
    /// Names of other configured services this one includes.
    public var includes: [String]
    public var characteristics: [CharacteristicConfig]

    public init(
        uuid: BluetoothUUID, name: String?, primary: Bool, includes: [String],
        characteristics: [CharacteristicConfig]
    ) {
        self.uuid = uuid
        self.name = name
        self.primary = primary
        self.includes = includes
        self.characteristics = characteristics
    }
}

public struct CharacteristicConfig: Sendable, Hashable {
    public var uuid: BluetoothUUID
    public var name: String?
    public var properties: CharacteristicProperties
    public var permissions: AttributePermissions
    /// Format, decimal exponent and maximum length of the value on air.
    public var encoding: ValueEncoding
    /// Presentation Format unit; nil for none.
    public var unit: GATTUnit?
    public var source: ValueSource
    public var descriptors: [DescriptorConfig]
    public var notify: NotifyPolicy
    /// `homeassistant:`: changes to the Home Assistant entity gattway announces for it.
    public var homeAssistant: HomeAssistantOverride?

    public init(
        uuid: BluetoothUUID, name: String?, properties: CharacteristicProperties,
        permissions: AttributePermissions, encoding: ValueEncoding, unit: GATTUnit?,
        source: ValueSource, descriptors: [DescriptorConfig], notify: NotifyPolicy,
        homeAssistant: HomeAssistantOverride? = nil
    ) {
        self.uuid = uuid
        self.name = name
        self.properties = properties
        self.permissions = permissions
        self.encoding = encoding
        self.unit = unit
        self.source = source
        self.descriptors = descriptors
        self.notify = notify
        self.homeAssistant = homeAssistant
    }
}

/// Characteristic properties as configured; bit values as in the Characteristic Declaration.
public struct CharacteristicProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = Self(rawValue: 0x02)
    public static let writeWithoutResponse = Self(rawValue: 0x04)
    public static let write = Self(rawValue: 0x08)
    public static let notify = Self(rawValue: 0x10)
    public static let indicate = Self(rawValue: 0x20)

    /// Configuration names, in declaration bit order.
    public static let names: [(name: String, property: Self)] = [
        ("read", .read), ("write_without_response", .writeWithoutResponse), ("write", .write),
        ("notify", .notify), ("indicate", .indicate)
    ]

    public var isWritable: Bool { !isDisjoint(with: [.write, .writeWithoutResponse]) }
    public var isSubscribable: Bool { !isDisjoint(with: [.notify, .indicate]) }
}

/// What a central's link must provide to read or write a characteristic.
public struct SecurityRequirement: Sendable, Hashable, CustomStringConvertible {
    public var encrypted: Bool
    /// MITM-protected pairing (implies `encrypted`).
    public var authenticated: Bool
    /// The central must be bonded (implies `encrypted`).
    public var bonded: Bool

    public init(encrypted: Bool, authenticated: Bool, bonded: Bool) {
        self.encrypted = encrypted || authenticated || bonded
        self.authenticated = authenticated
        self.bonded = bonded
    }

    public static let open = SecurityRequirement(encrypted: false, authenticated: false, bonded: false)
    public static let encryptedBonded = SecurityRequirement(
        encrypted: true, authenticated: false,
        bonded: true)

    public var isOpen: Bool { !encrypted }

    /// `open`, or the requirements joined: `encrypted, bonded`.
    public var description: String {
        if isOpen { return "open" }
        let parts = [
            (encrypted && !authenticated, "encrypted"), (authenticated, "authenticated"),
            (bonded, "bonded")
        ]
        return parts.filter(\.0).map(\.1).joined(separator: ", ")
    }
}

public struct AttributePermissions: Sendable, Hashable {
    public var read: SecurityRequirement
    public var write: SecurityRequirement

    public init(read: SecurityRequirement, write: SecurityRequirement) {
        self.read = read
        self.write = write
    }
}

/// Where a characteristic's value comes from.
public enum ValueSource: Sendable, Hashable {
    /// One of a sensor's values (an `output` sensor's state for outputs).
    case sensor(id: String, reading: SensorReading)
    /// The latest payload on an MQTT topic.
    case mqtt(topic: String)
    /// A fixed value (already checked against the characteristic's encoding).
    case fixed(SensorValue)
    /// Whatever centrals last wrote, starting from `initial`.
    case written(initial: SensorValue)
}

public struct DescriptorConfig: Sendable, Hashable {
    public var uuid: BluetoothUUID
    public var value: [UInt8]

    public init(uuid: BluetoothUUID, value: [UInt8]) {
        self.uuid = uuid
        self.value = value
    }
}
