import BluetoothATT
import BluetoothCore

/// What stands behind one attribute's value.
enum AttributeValue: Hashable, Sendable {
    /// Declarations, fixed characteristic values and fixed descriptors.
    case fixed([UInt8])
    /// A characteristic value served by the program's request handlers.
    case dynamic(PublishedCharacteristic)
    /// A descriptor served by the program's request handlers.
    case dynamicDescriptor(PublishedDescriptor)
    /// A CCCD: its value lives per central in the server's connection state.
    case clientConfiguration(PublishedCharacteristic)
    /// Client Supported Features (0x2B29): per central.
    case clientSupportedFeatures
    /// Database Hash (0x2B2A): computed from the database itself.
    case databaseHash

    /// Whether every read returns the same number of octets: true for declarations, fixed
    /// values and the server's own attributes (CCCD 2, Client Supported Features 1, Database
    /// Hash 16), false for values and descriptors the program serves.
    var hasFixedLength: Bool {
        switch self {
        case .fixed, .clientConfiguration, .clientSupportedFeatures, .databaseHash: true
        case .dynamic, .dynamicDescriptor: false
        }
    }
}

/// Which write PDUs an attribute accepts: properties (what a central may try) and permissions
/// (what it is allowed) folded together once, when the attribute is created.
struct AttributeWrites: OptionSet, Hashable, Sendable {
    let rawValue: UInt8
    static let request = Self(rawValue: 0x01)
    static let command = Self(rawValue: 0x02)
    static let signed = Self(rawValue: 0x04)
}

/// One row of the attribute table (Vol 3 Part F 3.2).
struct Attribute: Hashable, Sendable {
    let handle: UInt16
    let type: BluetoothUUID
    let value: AttributeValue
    let permissions: GATTPermissions
    let writes: AttributeWrites
    /// For a service declaration, the last handle of its service; otherwise the handle itself.
    let groupEnd: UInt16
}

/// Why the database refused a service.
public enum GATTDatabaseError: Error, Hashable, Sendable, CustomStringConvertible {
    case includedServiceNotPublished(GATTServiceID)
    case fixedValueMustBeReadOnly(BluetoothUUID)
    case valueTooLong(BluetoothUUID, length: Int)
    case reservedDescriptor(BluetoothUUID)
    case unknownService(GATTServiceID)
    case notRemovable(GATTServiceID)
    case databaseFull(needed: Int)

    public var description: String {
        switch self {
        case .includedServiceNotPublished(let id): "included \(id) is not published; publish it first"
        case .fixedValueMustBeReadOnly(let uuid):
            "characteristic \(uuid) has a fixed value, so it must be read-only (use a dynamic value to accept writes)"
        case .valueTooLong(let uuid, let length): "value of \(uuid) is \(length) bytes; the maximum is 512"
        case .reservedDescriptor(let uuid): "descriptor \(uuid) is managed by the server and cannot be added"
        case .unknownService(let id): "\(id) is not published"
        case .notRemovable(let id): "\(id) belongs to the server (GAP/GATT) and cannot be removed"
        case .databaseFull(let needed): "no free range of \(needed) handles is left"
        }
    }
}

/// The server's attribute table: services laid out on deterministic handles.
///
/// Handles are assigned first-fit: a service takes the lowest free run of handles large enough
/// for it, so the same sequence of adds (and removes) gives the same handles after a restart.
/// The GAP service takes handles 1–7 and the GATT service 8–15; program services follow.
struct AttributeDatabase: Sendable {
    static let maximumValueLength = 512

    struct ServiceRecord: Sendable {
        let published: PublishedService
        let isSystem: Bool
    }

    /// Sorted by handle.
    private(set) var attributes: [Attribute] = []
    private(set) var services: [GATTServiceID: ServiceRecord] = [:]
    private var nextServiceID: UInt64 = 1
    private var cachedHash: [UInt8]?

    // MARK: Lookup

    /// The index of the first attribute whose handle is ≥ `handle`.
    func lowerBound(_ handle: UInt16) -> Int {
        // Handles rise by at least one from each attribute to the next, so an attribute with
        // `handle` lies `handle - first` places in when no handle before it is free: the usual
        // layout, where one look finds it (every update asks, and the search took about 85
        // instructions). Past a free run it lies earlier, and is searched for.
        if let first = attributes.first?.handle, handle >= first {
            let guess = Int(handle - first)
            if guess < attributes.count, attributes[guess].handle == handle { return guess }
        }
        var low = 0
        var high = attributes.count
        while low < high {
            let middle = (low + high) / 2
            if attributes[middle].handle < handle { low = middle + 1 } else { high = middle }
        }
        return low
    }

    func attribute(at handle: UInt16) -> Attribute? {
        let index = lowerBound(handle)
        guard index < attributes.count, attributes[index].handle == handle else { return nil }
        return attributes[index]
    }

    /// Whether `characteristic` is published: its value handle still carries it. A dynamic value
    /// names its characteristic, service id included, and a service id is never used twice, so
    /// the same id at the same handle is proof enough, without hashing the id into `services` or
    /// comparing the rest (its UUID above all): every update asks. A fixed value names none; its
    /// service is looked up.
    func publishes(_ characteristic: PublishedCharacteristic) -> Bool {
        let index = lowerBound(characteristic.valueHandle)
        guard index < attributes.count else { return false }
        // Looked at where it lies: an attribute read out of the array is a copy of everything it
        // holds, retained and released (about 150 instructions, and every update asks).
        return attributes.withUnsafeBufferPointer { attributes in
            let attribute = attributes.baseAddress! + index
            guard attribute.pointee.handle == characteristic.valueHandle else { return false }
            if case .dynamic(let published) = attribute.pointee.value { return published.service == characteristic.service }
            return attribute.pointee.type == characteristic.uuid && services.index(forKey: characteristic.service) != nil
        }
    }

    var publishedServices: [PublishedService] {
        services.values.map(\.published).sorted { $0.handles.lowerBound < $1.handles.lowerBound }
    }

    // MARK: Changes

    /// Lays `service` out on the first free run of handles and returns it as published.
    mutating func add(_ service: GATTService, isSystem: Bool = false) throws(GATTDatabaseError) -> PublishedService {
        try validate(service)
        let count = Self.attributeCount(of: service)
        guard let start = firstFreeRun(of: count) else { throw .databaseFull(needed: count) }
        let id = GATTServiceID(rawValue: nextServiceID)
        nextServiceID += 1
        let laidOut = layOut(service, id: id, start: start, count: count, isSystem: isSystem)
        let index = lowerBound(start)
        attributes.insert(contentsOf: laidOut.attributes, at: index)
        services[id] = ServiceRecord(published: laidOut.published, isSystem: isSystem)
        cachedHash = nil
        return laidOut.published
    }

    mutating func remove(_ id: GATTServiceID) throws(GATTDatabaseError) -> PublishedService {
        guard let record = services[id] else { throw .unknownService(id) }
        guard !record.isSystem else { throw .notRemovable(id) }
        let range = record.published.handles
        let first = lowerBound(range.lowerBound)
        var last = first
        while last < attributes.count, attributes[last].handle <= range.upperBound { last += 1 }
        attributes.removeSubrange(first..<last)
        services[id] = nil
        cachedHash = nil
        return record.published
    }

    // MARK: Database Hash (Vol 3 Part G 7.3)

    /// The Database Hash as the characteristic carries it: AES-CMAC with a zero key over the
    /// handle, type and (for declarations and Extended Properties) value of the attributes the
    /// spec lists, in handle order. The CMAC's 16 bytes (most significant first) are sent
    /// least significant first, like every multi-octet ATT value.
    mutating func databaseHash() -> [UInt8] {
        if let cachedHash { return cachedHash }
        let hash = (try? AESCMAC.mac(hashInput, key: [UInt8](repeating: 0, count: 16))) ?? []
        cachedHash = Array(hash.reversed())
        return cachedHash!
    }

    var hashInput: [UInt8] { Self.hashInput(attributes) }

    /// The message the Database Hash covers.
    static func hashInput(_ attributes: [Attribute]) -> [UInt8] {
        var writer = ByteWriter(capacity: attributes.count * 8)
        for attribute in attributes {
            let withValue: Bool
            switch attribute.type {
            case .primaryService, .secondaryService, .includedService, .characteristicDeclaration,
                .characteristicExtendedProperties:
                withValue = true
            case .characteristicUserDescription, .clientCharacteristicConfiguration,
                .serverCharacteristicConfiguration, .characteristicPresentationFormat,
                .characteristicAggregateFormat:
                withValue = false
            default:
                continue
            }
            writer.write(attribute.handle)
            writer.write(contentsOf: attribute.type.attBytes)
            if withValue, case .fixed(let value) = attribute.value { writer.write(contentsOf: value) }
        }
        return writer.bytes
    }

    // MARK: Layout

    private func validate(_ service: GATTService) throws(GATTDatabaseError) {
        for included in service.includedServices where services[included] == nil {
            throw .includedServiceNotPublished(included)
        }
        let reserved: Set<BluetoothUUID> = [
            .clientCharacteristicConfiguration, .characteristicExtendedProperties,
            .primaryService, .secondaryService, .includedService,
            .characteristicDeclaration
        ]
        for characteristic in service.characteristics {
            if case .fixed(let value) = characteristic.value {
                let writable =
                    !characteristic.permissions.isDisjoint(with: GATTPermissions.anyWrite)
                    || !characteristic.properties.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites])
                guard !writable else { throw .fixedValueMustBeReadOnly(characteristic.uuid) }
                guard value.count <= Self.maximumValueLength else {
                    throw .valueTooLong(characteristic.uuid, length: value.count)
                }
            }
            for descriptor in characteristic.descriptors {
                guard !reserved.contains(descriptor.uuid) else { throw .reservedDescriptor(descriptor.uuid) }
                // A fixed descriptor takes no writes whatever its permissions say (no `writes`).
                guard case .fixed(let value) = descriptor.value else { continue }
                guard value.count <= Self.maximumValueLength else {
                    throw .valueTooLong(descriptor.uuid, length: value.count)
                }
            }
        }
    }

    static func attributeCount(of service: GATTService) -> Int {
        1 + service.includedServices.count
            + service.characteristics.reduce(0) { total, characteristic in
                total + 2 + characteristic.descriptors.count
                    + (characteristic.properties.isDisjoint(with: [.notify, .indicate]) ? 0 : 1)
                    + (characteristic.extendedProperties.isEmpty ? 0 : 1)
            }
    }

    /// The lowest start handle of `count` consecutive free handles.
    private func firstFreeRun(of count: Int) -> UInt16? {
        var candidate = 1
        for attribute in attributes {
            if Int(attribute.handle) - candidate >= count { break }
            candidate = Int(attribute.handle) + 1
        }
        return candidate + count - 1 <= Int(UInt16.max) ? UInt16(candidate) : nil
    }

    private func layOut(
        _ service: GATTService, id: GATTServiceID, start: UInt16, count: Int, isSystem: Bool
    )
        -> (attributes: [Attribute], published: PublishedService)
    {
        let end = start + UInt16(count - 1)
        var rows: [Attribute] = []
        rows.reserveCapacity(count)
        var handle = start
        func append(
            _ type: BluetoothUUID, _ value: AttributeValue, _ permissions: GATTPermissions,
            writes: AttributeWrites = [], groupEnd: UInt16? = nil
        ) {
            rows.append(
                Attribute(
                    handle: handle, type: type, value: value, permissions: permissions,
                    writes: writes, groupEnd: groupEnd ?? handle))
            handle += 1
        }

        append(
            service.isPrimary ? .primaryService : .secondaryService, .fixed(service.uuid.attBytes),
            .readable, groupEnd: end)
        for includedID in service.includedServices {
            let included = services[includedID]!.published
            var value = ByteWriter(capacity: 6)
            value.write(included.handles.lowerBound)
            value.write(included.handles.upperBound)
            // Only 16-bit service UUIDs appear in the include declaration (Vol 3 Part G 3.2).
            if included.uuid.uint16Value != nil { value.write(contentsOf: included.uuid.attBytes) }
            append(.includedService, .fixed(value.bytes), .readable)
        }

        var published: [PublishedCharacteristic] = []
        for characteristic in service.characteristics {
            var properties = characteristic.properties.subtracting(.extendedProperties)
            if !characteristic.extendedProperties.isEmpty { properties.insert(.extendedProperties) }
            let declarationHandle = handle
            let valueHandle = handle + 1
            let subscribable = !properties.isDisjoint(with: [.notify, .indicate])
            let cccdHandle: UInt16? =
                subscribable
                ? valueHandle + 1 + (characteristic.extendedProperties.isEmpty ? 0 : 1) : nil
            let reference = PublishedCharacteristic(
                service: id, uuid: characteristic.uuid, declarationHandle: declarationHandle,
                valueHandle: valueHandle, clientConfigurationHandle: cccdHandle, properties: properties)
            published.append(reference)

            var declaration = ByteWriter(capacity: 19)
            declaration.write(properties.rawValue)
            declaration.write(valueHandle)
            declaration.write(contentsOf: characteristic.uuid.attBytes)
            append(.characteristicDeclaration, .fixed(declaration.bytes), .readable)

            let value: AttributeValue
            switch characteristic.value {
            case .fixed(let bytes): value = .fixed(bytes)
            case .dynamic where isSystem && characteristic.uuid == .clientSupportedFeatures:
                value = .clientSupportedFeatures
            case .dynamic where isSystem && characteristic.uuid == .databaseHash:
                value = .databaseHash
            case .dynamic: value = .dynamic(reference)
            }
            var writes: AttributeWrites = []
            if !characteristic.permissions.isDisjoint(with: GATTPermissions.anyWrite) {
                if properties.contains(.write) { writes.insert(.request) }
                if properties.contains(.writeWithoutResponse) { writes.insert(.command) }
                if properties.contains(.authenticatedSignedWrites) { writes.insert(.signed) }
            }
            let readPermissions =
                properties.contains(.read)
                ? characteristic.permissions : characteristic.permissions.subtracting(GATTPermissions.anyRead)
            append(characteristic.uuid, value, readPermissions, writes: writes)

            if !characteristic.extendedProperties.isEmpty {
                var bits = ByteWriter(capacity: 2)
                bits.write(characteristic.extendedProperties.rawValue)
                append(.characteristicExtendedProperties, .fixed(bits.bytes), .readable)
            }
            if subscribable {
                append(
                    .clientCharacteristicConfiguration, .clientConfiguration(reference),
                    [.readable, .writeable], writes: .request)
            }
            for (position, descriptor) in characteristic.descriptors.enumerated() {
                switch descriptor.value {
                case .fixed(let bytes):
                    append(descriptor.uuid, .fixed(bytes), descriptor.permissions)
                case .dynamic:
                    let published = PublishedDescriptor(
                        characteristic: reference, uuid: descriptor.uuid,
                        handle: handle, position: position)
                    // Descriptors have no properties: a write permission admits Write Requests
                    // (and prepared writes), never commands (Vol 3 Part G 4.12.3).
                    let writes: AttributeWrites =
                        descriptor.permissions.isDisjoint(with: GATTPermissions.anyWrite)
                        ? [] : .request
                    append(descriptor.uuid, .dynamicDescriptor(published), descriptor.permissions, writes: writes)
                }
            }
        }
        let publishedService = PublishedService(
            id: id, uuid: service.uuid, isPrimary: service.isPrimary,
            handles: start...end, characteristics: published)
        return (rows, publishedService)
    }
}
