import BluetoothCore
import BluetoothGATT
import Config
import Synchronization
import Values

/// Names one configured characteristic: its service's and its own position in the configuration,
/// and `<service>/<characteristic>` (config names, UUIDs where unnamed) for logs and MQTT topics.
///
/// The path is held as its number in `CharacteristicPaths`, not as a string: a ref travels with
/// every value (the notify engine's queues, the store, the mirror's events), and a string in it
/// was retained and released at each copy, where a ref of plain numbers is copied as bytes.
public struct CharacteristicRef: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let service: Int
    public let characteristic: Int
    private let pathNumber: Int

    public init(service: Int, characteristic: Int, path: String) {
        self.service = service
        self.characteristic = characteristic
        pathNumber = CharacteristicPaths.number(of: path)
    }

    /// `<service>/<characteristic>`.
    public var path: String { CharacteristicPaths.path(numbered: pathNumber) }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        (lhs.service, lhs.characteristic) < (rhs.service, rhs.characteristic)
    }

    /// The positions alone: they tell characteristics of one configuration apart, and a value is
    /// looked up by its characteristic many times on the way to a notification. Equality also
    /// compares the path (by its number: the same path always has the same number).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(service)
        hasher.combine(characteristic)
    }

    public var description: String { path }
}

/// Every characteristic path this process has named, each under one number for the life of the
/// process. Paths come from configurations (the first and each reload), so the table stays as
/// small as the set of paths ever configured; looking one up takes the lock, which only logs,
/// topics and state files do, never the event path.
enum CharacteristicPaths {
    private static let table = Mutex<(numbers: [String: Int], paths: [String])>(([:], []))

    static func number(of path: String) -> Int {
        table.withLock { table in
            if let number = table.numbers[path] { return number }
            table.paths.append(path)
            table.numbers[path] = table.paths.count - 1
            return table.paths.count - 1
        }
    }

    static func path(numbered number: Int) -> String {
        table.withLock { $0.paths[number] }
    }
}

/// A value per characteristic, found by its ref's configuration positions: two array indexings
/// and a comparison, where a dictionary keyed by the ref hashes it (SipHash) on every look-up, and
/// the event path looks up the characteristic of a value several times per sensor reading.
struct CharacteristicTable<Value> {
    /// `[service][characteristic]`; the ref is kept to tell a ref of another layout at the same
    /// positions apart, as the dictionary's equality did.
    private var slots: [[(ref: CharacteristicRef, value: Value)?]] = []

    init() {}

    init(_ entries: some Sequence<(CharacteristicRef, Value)>) {
        for (ref, value) in entries { self[ref] = value }
    }

    subscript(ref: CharacteristicRef) -> Value? {
        get {
            guard slots.indices.contains(ref.service), slots[ref.service].indices.contains(ref.characteristic),
                let slot = slots[ref.service][ref.characteristic], slot.ref == ref
            else { return nil }
            return slot.value
        }
        set {
            if slots.count <= ref.service { slots += Array(repeating: [], count: ref.service + 1 - slots.count) }
            if slots[ref.service].count <= ref.characteristic {
                slots[ref.service] += Array(repeating: nil, count: ref.characteristic + 1 - slots[ref.service].count)
            }
            slots[ref.service][ref.characteristic] = newValue.map { (ref, $0) }
        }
    }

    /// Every entry, keyed by its ref: to look at the whole table, not for the event path.
    var entries: [CharacteristicRef: Value] {
        var entries: [CharacteristicRef: Value] = [:]
        for case (let ref, let value)? in slots.joined() { entries[ref] = value }
        return entries
    }
}

extension CharacteristicTable: Sendable where Value: Sendable {}

/// The GATT database a configuration describes: one `GATTService` per configured service, in the
/// order they must be published (a service after the services it includes), and the settings of
/// each characteristic the value pipeline needs.
///
/// Pure and deterministic: the same configuration gives the same services in the same order, and
/// the attribute database hands out handles in publishing order, so the same configuration gets
/// the same handles on every start (phones cache them).
public struct GATTLayout: Sendable {
    /// One characteristic as the gateway serves it.
    public struct Characteristic: Sendable {
        public let ref: CharacteristicRef
        public let config: CharacteristicConfig
        /// The service's and the characteristic's names for MQTT topics (UUIDs where unnamed).
        public let serviceName: String
        public let name: String
        /// The sensor behind the value, when it is an output (writes drive its line).
        public let outputSensor: String?
    }

    /// Service indices (into the configuration) in publishing order.
    public let publishingOrder: [Int]
    public let characteristics: [CharacteristicRef: Characteristic]
    private let config: GatewayConfig

    public init(config: GatewayConfig) {
        self.config = config
        publishingOrder = Self.order(config.services)
        var characteristics: [CharacteristicRef: Characteristic] = [:]
        for (serviceIndex, service) in config.services.enumerated() {
            for (index, characteristic) in service.characteristics.enumerated() {
                let serviceName = service.name ?? service.uuid.description
                let name = characteristic.name ?? characteristic.uuid.description
                let ref = CharacteristicRef(
                    service: serviceIndex, characteristic: index,
                    path: "\(serviceName)/\(name)")
                var outputSensor: String?
                if case .sensor(let id, _) = characteristic.source, config.sensor(id: id)?.kind.isOutput == true {
                    outputSensor = id
                }
                characteristics[ref] = Characteristic(
                    ref: ref, config: characteristic, serviceName: serviceName,
                    name: name, outputSensor: outputSensor)
            }
        }
        self.characteristics = characteristics
    }

    /// The GATT server's own settings from the configuration: GAP device name and appearance, and
    /// the Peripheral Preferred Connection Parameters (intervals in 1.25 ms units, supervision
    /// timeout in 10 ms units, as the characteristic carries them).
    public var serverConfiguration: GATTServer.Configuration {
        let connection = config.bluetooth.connection
        return GATTServer.Configuration(
            deviceName: config.device.name, appearance: config.device.appearance,
            preferredConnectionParameters: .init(
                minimumInterval: connection.minIntervalUnits, maximumInterval: connection.maxIntervalUnits,
                peripheralLatency: UInt16(clamping: connection.latency),
                supervisionTimeout: connection.supervisionTimeoutUnits))
    }

    /// The characteristic at `path` (`<service>/<characteristic>`).
    public func ref(_ path: String) -> CharacteristicRef? {
        characteristics.keys.first { $0.path == path }
    }

    /// The characteristic at a configuration position.
    public func ref(service: Int, characteristic: Int) -> CharacteristicRef? {
        characteristics.keys.first { $0.service == service && $0.characteristic == characteristic }
    }

    /// The configured name of service `index`, by which other services include it.
    public func serviceName(_ index: Int) -> String? { config.services[index].name }

    /// The names of the services configured service `index` includes.
    public func includedServiceNames(_ index: Int) -> [String] { config.services[index].includes }

    /// The characteristics of configured service `index`, in configuration order.
    public func refs(ofService index: Int) -> [CharacteristicRef] {
        characteristics.keys.filter { $0.service == index }.sorted()
    }

    /// The service to publish for configured service `index`; `included` gives the published IDs
    /// of the services it includes (published earlier, see `publishingOrder`).
    public func service(_ index: Int, included: (String) -> GATTServiceID?) throws(ValueError) -> GATTService {
        let service = config.services[index]
        return GATTService(
            uuid: service.uuid, isPrimary: service.primary,
            includedServices: service.includes.compactMap(included),
            characteristics: try service.characteristics.map { characteristic throws(ValueError) in
                try Self.characteristic(characteristic, in: service, sensors: config)
            })
    }

    static func characteristic(
        _ characteristic: CharacteristicConfig, in service: ServiceConfig,
        sensors config: GatewayConfig
    ) throws(ValueError) -> GATTCharacteristic {
        var properties = GATTCharacteristicProperties(rawValue: characteristic.properties.rawValue)
        properties.remove(.extendedProperties)
        var permissions = GATTPermissions()
        if characteristic.properties.contains(.read) {
            permissions.formUnion(readPermissions(characteristic.permissions.read))
        }
        if characteristic.properties.isWritable {
            permissions.formUnion(writePermissions(characteristic.permissions.write))
        }
        let value: GATTValue
        if case .fixed(let fixed) = characteristic.source, !characteristic.properties.isWritable {
            value = .fixed(try characteristic.encoding.encode(fixed))
        } else {
            // Sensor, MQTT and written values change: every read is served from the pipeline.
            value = .dynamic
        }
        return GATTCharacteristic(
            uuid: characteristic.uuid, properties: properties, permissions: permissions,
            value: value,
            descriptors: try descriptors(characteristic, in: service, config: config))
    }

    /// The configured descriptors, then the automatic ones a sensor-backed characteristic gets
    /// (User Description, Presentation Format, and ES Measurement in the Environmental Sensing
    /// Service) unless the configuration gives that descriptor itself, then, for a notifying ESS
    /// measurement, the writable trigger descriptors (`TriggerDescriptors`).
    static func descriptors(
        _ characteristic: CharacteristicConfig, in service: ServiceConfig,
        config: GatewayConfig
    ) throws(ValueError) -> [GATTDescriptor] {
        var result = characteristic.descriptors.map { GATTDescriptor(uuid: $0.uuid, value: $0.value) }
        guard case .sensor(let sensorID, let reading) = characteristic.source else { return result }
        let isEnvironmental =
            service.uuid == EnvironmentalSensingCharacteristic.serviceUUID
            && EnvironmentalSensingCharacteristic.allCases.contains { $0.uuid == characteristic.uuid }
        let name = characteristic.name ?? (reading == .value ? sensorID : "\(sensorID) \(reading.rawValue)")
        let automatic = try SensorDescriptors.make(
            name: name, encoding: characteristic.encoding, unit: characteristic.unit ?? .unitless,
            measurement: isEnvironmental ? ESMeasurement() : nil)
        let configured = Set(result.map(\.uuid))
        result += automatic.filter { !configured.contains($0.uuid) }
            .map { GATTDescriptor(uuid: $0.uuid, value: $0.value) }
        // Centrals set their own conditions on a notifying ESS measurement (ESS 1.0 §3.1.2).
        if isEnvironmental, !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
            result += TriggerDescriptors.descriptors
        }
        return result
    }

    /// `open` is plain readable; `encrypted`, `authenticated` (MITM) and `bonded` (a key stored
    /// in a bond) each add their requirement, and each implies an encrypted link.
    static func readPermissions(_ requirement: SecurityRequirement) -> GATTPermissions {
        permissions(
            requirement, plain: .readable, encrypted: .readEncryptionRequired,
            authenticated: .readAuthenticationRequired, bonded: .readBondingRequired)
    }

    static func writePermissions(_ requirement: SecurityRequirement) -> GATTPermissions {
        permissions(
            requirement, plain: .writeable, encrypted: .writeEncryptionRequired,
            authenticated: .writeAuthenticationRequired, bonded: .writeBondingRequired)
    }

    private static func permissions(
        _ requirement: SecurityRequirement, plain: GATTPermissions,
        encrypted: GATTPermissions, authenticated: GATTPermissions,
        bonded: GATTPermissions
    ) -> GATTPermissions {
        guard requirement.encrypted else { return plain }
        var permissions = encrypted
        if requirement.authenticated { permissions.insert(authenticated) }
        if requirement.bonded { permissions.insert(bonded) }
        return permissions
    }

    /// Configuration order, except that a service comes after the services it includes
    /// (the configuration layer rejects include cycles).
    static func order(_ services: [ServiceConfig]) -> [Int] {
        var placed: [Int] = []
        var visiting: Set<Int> = []
        func place(_ index: Int) {
            guard !placed.contains(index), !visiting.contains(index) else { return }
            visiting.insert(index)
            for name in services[index].includes {
                if let included = services.firstIndex(where: { $0.name == name }) { place(included) }
            }
            placed.append(index)
        }
        services.indices.forEach(place)
        return placed
    }
}
