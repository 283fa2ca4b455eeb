import BluetoothATT
import BluetoothCore

/// Attribute types GATT defines (Core 5.4 Vol 3 Part G 3, Assigned Numbers 3.4–3.8).
extension BluetoothUUID {
    public static let primaryService = BluetoothUUID(0x2800)
    public static let secondaryService = BluetoothUUID(0x2801)
    public static let includedService = BluetoothUUID(0x2802)
    public static let characteristicDeclaration = BluetoothUUID(0x2803)
    public static let characteristicExtendedProperties = BluetoothUUID(0x2900)
    public static let characteristicUserDescription = BluetoothUUID(0x2901)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    public static let serverCharacteristicConfiguration = BluetoothUUID(0x2903)
    public static let characteristicPresentationFormat = BluetoothUUID(0x2904)
    public static let characteristicAggregateFormat = BluetoothUUID(0x2905)
    public static let genericAccessService = BluetoothUUID(0x1800)
    public static let genericAttributeService = BluetoothUUID(0x1801)
    public static let deviceName = BluetoothUUID(0x2A00)
    public static let appearance = BluetoothUUID(0x2A01)
    public static let peripheralPreferredConnectionParameters = BluetoothUUID(0x2A04)
    public static let serviceChanged = BluetoothUUID(0x2A05)
    public static let clientSupportedFeatures = BluetoothUUID(0x2B29)
    public static let databaseHash = BluetoothUUID(0x2B2A)
}

/// Characteristic properties: what a central may try (Vol 3 Part G 3.3.1.1).
public struct GATTCharacteristicProperties: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public static let broadcast = Self(rawValue: 0x01)
    public static let read = Self(rawValue: 0x02)
    public static let writeWithoutResponse = Self(rawValue: 0x04)
    public static let write = Self(rawValue: 0x08)
    public static let notify = Self(rawValue: 0x10)
    public static let indicate = Self(rawValue: 0x20)
    public static let authenticatedSignedWrites = Self(rawValue: 0x40)
    /// Set by the database when a characteristic has extended properties; not for the program.
    public static let extendedProperties = Self(rawValue: 0x80)
}

/// Characteristic Extended Properties descriptor bits (Vol 3 Part G 3.3.3.1).
public struct GATTExtendedProperties: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let reliableWrite = Self(rawValue: 0x0001)
    public static let writableAuxiliaries = Self(rawValue: 0x0002)
}

/// Attribute permissions: what a central is allowed (Vol 3 Part F 3.2.5). The encryption,
/// authentication and authorization variants imply the plain permission of the same direction.
public struct GATTPermissions: OptionSet, Hashable, Sendable {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let readable = Self(rawValue: 0x0001)
    public static let writeable = Self(rawValue: 0x0002)
    public static let readEncryptionRequired = Self(rawValue: 0x0004)
    public static let writeEncryptionRequired = Self(rawValue: 0x0008)
    public static let readAuthenticationRequired = Self(rawValue: 0x0010)
    public static let writeAuthenticationRequired = Self(rawValue: 0x0020)
    public static let readAuthorizationRequired = Self(rawValue: 0x0040)
    public static let writeAuthorizationRequired = Self(rawValue: 0x0080)
    /// gattway's `bonded`: an encrypted link whose key is stored in a bond (the central paired
    /// with bonding). Not an ATT permission of the specification, which leaves it to the
    /// implementation (Vol 3 Part F 3.2.5); it implies encryption.
    public static let readBondingRequired = Self(rawValue: 0x0100)
    public static let writeBondingRequired = Self(rawValue: 0x0200)

    static let anyRead: Self = [
        .readable, .readEncryptionRequired, .readAuthenticationRequired,
        .readAuthorizationRequired, .readBondingRequired
    ]
    static let anyWrite: Self = [
        .writeable, .writeEncryptionRequired, .writeAuthenticationRequired,
        .writeAuthorizationRequired, .writeBondingRequired
    ]
}

/// A characteristic's value: fixed (cached by the server, read-only) or dynamic (every read and
/// write goes to the program's request handlers).
public enum GATTValue: Hashable, Sendable {
    case fixed([UInt8])
    case dynamic
}

/// A descriptor the program adds to a characteristic. The CCCD (0x2902) and Extended Properties
/// (0x2900) are the server's own and are added from the characteristic's properties.
///
/// A fixed descriptor is read-only and its value is cached by the server. A dynamic one
/// (`dynamic(_:permissions:)`) is served by the program's request handlers like a dynamic
/// characteristic value: reads and writes name the descriptor, so its value may be one for the
/// whole server or one per central, as the profile defining it says (e.g. the Environmental
/// Sensing Service's trigger settings).
public struct GATTDescriptor: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var value: GATTValue
    public var permissions: GATTPermissions

    public init(uuid: BluetoothUUID, value: [UInt8], permissions: GATTPermissions = .readable) {
        self.uuid = uuid
        self.value = .fixed(value)
        self.permissions = permissions
    }

    /// A descriptor whose reads and writes go to the request handlers.
    public static func dynamic(_ uuid: BluetoothUUID, permissions: GATTPermissions) -> GATTDescriptor {
        var descriptor = GATTDescriptor(uuid: uuid, value: [], permissions: permissions)
        descriptor.value = .dynamic
        return descriptor
    }

    /// Characteristic User Description (0x2901): UTF-8 text.
    public static func userDescription(_ text: String) -> GATTDescriptor {
        GATTDescriptor(uuid: .characteristicUserDescription, value: Array(text.utf8))
    }

    /// Characteristic Presentation Format (0x2904, Vol 3 Part G 3.3.3.5): format, exponent,
    /// unit (a 0x27xx UUID), namespace (0x01 = Bluetooth SIG) and description.
    public static func presentationFormat(
        format: UInt8, exponent: Int8, unit: UInt16, namespace: UInt8 = 0x01, description: UInt16 = 0
    ) -> GATTDescriptor {
        var writer = ByteWriter(capacity: 7)
        writer.write(format)
        writer.write(UInt8(bitPattern: exponent))
        writer.write(unit)
        writer.write(namespace)
        writer.write(description)
        return GATTDescriptor(uuid: .characteristicPresentationFormat, value: writer.bytes)
    }
}

/// A characteristic as the program defines it.
public struct GATTCharacteristic: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var properties: GATTCharacteristicProperties
    public var extendedProperties: GATTExtendedProperties
    public var permissions: GATTPermissions
    public var value: GATTValue
    public var descriptors: [GATTDescriptor]

    public init(
        uuid: BluetoothUUID, properties: GATTCharacteristicProperties,
        extendedProperties: GATTExtendedProperties = [], permissions: GATTPermissions,
        value: GATTValue, descriptors: [GATTDescriptor] = []
    ) {
        self.uuid = uuid
        self.properties = properties
        self.extendedProperties = extendedProperties
        self.permissions = permissions
        self.value = value
        self.descriptors = descriptors
    }
}

/// Identifies one published service for as long as it stays published. Never reused, so a
/// reference kept after removal cannot reach a later service that took over the same handles.
public struct GATTServiceID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "service#\(rawValue)" }
}

/// A service as the program defines it. A secondary service only makes sense included in
/// another; included services must be published first and are named by their ID.
public struct GATTService: Hashable, Sendable {
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var includedServices: [GATTServiceID]
    public var characteristics: [GATTCharacteristic]

    public init(
        uuid: BluetoothUUID, isPrimary: Bool = true, includedServices: [GATTServiceID] = [],
        characteristics: [GATTCharacteristic]
    ) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includedServices = includedServices
        self.characteristics = characteristics
    }
}

/// A published characteristic: how the program names it in `updateValue` and how request
/// handlers are told which characteristic a central reads or writes.
public struct PublishedCharacteristic: Hashable, Sendable {
    public let service: GATTServiceID
    public let uuid: BluetoothUUID
    public let declarationHandle: UInt16
    public let valueHandle: UInt16
    /// The CCCD's handle when the characteristic notifies or indicates.
    public let clientConfigurationHandle: UInt16?
    public let properties: GATTCharacteristicProperties
}

/// A published dynamic descriptor, as request handlers are told which descriptor a central reads
/// or writes.
public struct PublishedDescriptor: Hashable, Sendable {
    public let characteristic: PublishedCharacteristic
    public let uuid: BluetoothUUID
    public let handle: UInt16
    /// Its index in the `GATTCharacteristic.descriptors` the program gave, which tells apart
    /// several descriptors of one type (e.g. ES Trigger Settings).
    public let position: Int
}

/// A published service and the handles it occupies.
public struct PublishedService: Hashable, Sendable {
    public let id: GATTServiceID
    public let uuid: BluetoothUUID
    public let isPrimary: Bool
    public let handles: ClosedRange<UInt16>
    public let characteristics: [PublishedCharacteristic]

    /// The published characteristic with this UUID (the first, if the service repeats it).
    public func characteristic(_ uuid: BluetoothUUID) -> PublishedCharacteristic? {
        characteristics.first { $0.uuid == uuid }
    }
}
