import BluetoothCore

public struct ServiceConfig: Sendable, Hashable {
    public var uuid: BluetoothUUID
    /// Used in MQTT topics and by `includes`; nil for an unnamed service (topics use the UUID).
    public var name: String?
    public var primary: Bool
    /// Names of other configured services this one includes.
    public var includes: [String]
    public var characteristics: [CharacteristicConfig]

    public init(uuid: BluetoothUUID, name: String?, primary: Bool, includes: [String],
                characteristics: [CharacteristicConfig]) {
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
    public var format: CharacteristicFormat
    /// GATT unit (Assigned Numbers 3.5), e.g. 0x272F for degrees Celsius; nil for none.
    public var unit: UInt16?
    public var source: ValueSource
    public var descriptors: [DescriptorConfig]
    public var notify: NotifyPolicyConfig

    public init(uuid: BluetoothUUID, name: String?, properties: CharacteristicProperties,
                permissions: AttributePermissions, format: CharacteristicFormat, unit: UInt16?,
                source: ValueSource, descriptors: [DescriptorConfig], notify: NotifyPolicyConfig) {
        self.uuid = uuid
        self.name = name
        self.properties = properties
        self.permissions = permissions
        self.format = format
        self.unit = unit
        self.source = source
        self.descriptors = descriptors
        self.notify = notify
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
        ("notify", .notify), ("indicate", .indicate),
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
    public static let encryptedBonded = SecurityRequirement(encrypted: true, authenticated: false,
                                                            bonded: true)

    public var isOpen: Bool { !encrypted }

    /// `open`, or the requirements joined: `encrypted, bonded`.
    public var description: String {
        if isOpen { return "open" }
        let parts = [(encrypted && !authenticated, "encrypted"), (authenticated, "authenticated"),
                     (bonded, "bonded")]
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

/// How a characteristic's value is encoded on the air (all little-endian).
public enum CharacteristicFormat: Sendable, Hashable {
    case bool
    /// Unsigned and signed integers of `bits` width; the value is `raw × 10^exponent`
    /// (the Presentation Format's fixed-point model).
    case unsigned(bits: Int, exponent: Int8)
    case signed(bits: Int, exponent: Int8)
    case float32
    case float64
    /// IEEE 11073-20601 16-bit SFLOAT.
    case sfloat
    /// IEEE 11073-20601 32-bit FLOAT.
    case float
    case utf8(maxLength: Int)
    case bytes(maxLength: Int)

    /// The configuration name: `uint16`, `sfloat`, `utf8`...
    public var name: String {
        switch self {
        case .bool: "bool"
        case .unsigned(let bits, _): "uint\(bits)"
        case .signed(let bits, _): "sint\(bits)"
        case .float32: "float32"
        case .float64: "float64"
        case .sfloat: "sfloat"
        case .float: "float"
        case .utf8: "utf8"
        case .bytes: "bytes"
        }
    }

    public var isNumeric: Bool {
        switch self {
        case .bool, .utf8, .bytes: false
        default: true
        }
    }
}

/// Where a characteristic's value comes from.
public enum ValueSource: Sendable, Hashable {
    /// One of a sensor's values (an `output` sensor's state for outputs).
    case sensor(id: String, reading: SensorReading)
    /// The latest payload on an MQTT topic.
    case mqtt(topic: String)
    /// A fixed value.
    case fixed(ConfigValue)
    /// Whatever centrals last wrote, starting from `initial`.
    case written(initial: ConfigValue)
}

/// A literal value from the configuration, already checked against the characteristic's format.
public enum ConfigValue: Sendable, Hashable {
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case text(String)
    case bytes([UInt8])
}

public struct DescriptorConfig: Sendable, Hashable {
    public var uuid: BluetoothUUID
    public var value: [UInt8]

    public init(uuid: BluetoothUUID, value: [UInt8]) {
        self.uuid = uuid
        self.value = value
    }
}

public struct NotifyPolicyConfig: Sendable, Hashable {
    /// No two notifications closer than this; the newest value is sent when it expires.
    public var minInterval: Duration
    /// Resend the current value when nothing was sent for this long; nil for never.
    public var maxInterval: Duration?
    /// Suppress changes smaller than this; nil for any change.
    public var delta: NotifyDelta?
    /// Notify when the value changes (otherwise only the `maxInterval` heartbeat).
    public var onChange: Bool

    public init(minInterval: Duration, maxInterval: Duration?, delta: NotifyDelta?, onChange: Bool) {
        self.minInterval = minInterval
        self.maxInterval = maxInterval
        self.delta = delta
        self.onChange = onChange
    }
}

public enum NotifyDelta: Sendable, Hashable {
    case absolute(Double)
    /// Percent of the last sent value.
    case percent(Double)
}
