import BluetoothCore

/// What gattway advertises, as configured.
public struct AdvertisingSettings: Equatable, Sendable {
    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID]
    /// GAP Appearance value (Assigned Numbers 2.6), if advertised.
    public var appearance: UInt16?
    /// Whether to advertise the controller's advertising TX power.
    public var includeTxPower: Bool
    /// Company identifier and data, for the Manufacturer Specific Data field.
    public var manufacturerData: (companyID: UInt16, data: [UInt8])?
    /// Service Data fields, one per service UUID.
    public var serviceData: [(uuid: BluetoothUUID, data: [UInt8])]
    /// Service data for receivers that scan passively (BTHome): Home Assistant never sends scan
    /// requests, so this field goes right after the flags, in the advertising data itself, ahead of
    /// the UUIDs and the name (which move to the scan response when space is short), never in the
    /// scan response.
    public var passiveServiceData: (uuid: BluetoothUUID, data: [UInt8])?
    /// Advertising interval in milliseconds (20 ms to 10.24 s).
    public var intervalMilliseconds: Int

    public init(
        localName: String? = nil, serviceUUIDs: [BluetoothUUID] = [], appearance: UInt16? = nil,
        includeTxPower: Bool = false, manufacturerData: (companyID: UInt16, data: [UInt8])? = nil,
        serviceData: [(uuid: BluetoothUUID, data: [UInt8])] = [],
        passiveServiceData: (uuid: BluetoothUUID, data: [UInt8])? = nil, intervalMilliseconds: Int = 100
    ) {
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.appearance = appearance
        self.includeTxPower = includeTxPower
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.passiveServiceData = passiveServiceData
        self.intervalMilliseconds = intervalMilliseconds
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.localName == rhs.localName && lhs.serviceUUIDs == rhs.serviceUUIDs
            && lhs.appearance == rhs.appearance && lhs.includeTxPower == rhs.includeTxPower
            && lhs.manufacturerData?.companyID == rhs.manufacturerData?.companyID
            && lhs.manufacturerData?.data == rhs.manufacturerData?.data
            && lhs.serviceData.map(\.uuid) == rhs.serviceData.map(\.uuid)
            && lhs.serviceData.map(\.data) == rhs.serviceData.map(\.data)
            && lhs.passiveServiceData?.uuid == rhs.passiveServiceData?.uuid
            && lhs.passiveServiceData?.data == rhs.passiveServiceData?.data
            && lhs.intervalMilliseconds == rhs.intervalMilliseconds
    }

    /// The interval in the 0.625 ms units HCI uses, clamped to the legal 0x0020...0x4000.
    public var intervalUnits: UInt16 {
        UInt16(min(max(intervalMilliseconds * 1000 / 625, 0x0020), 0x4000))
    }
}

/// AD type codes (Core Supplement Part A 1, Assigned Numbers 2.3).
enum ADType {
    static let flags: UInt8 = 0x01
    static let incomplete16: UInt8 = 0x02
    static let complete16: UInt8 = 0x03
    static let incomplete32: UInt8 = 0x04
    static let complete32: UInt8 = 0x05
    static let incomplete128: UInt8 = 0x06
    static let complete128: UInt8 = 0x07
    static let shortenedName: UInt8 = 0x08
    static let completeName: UInt8 = 0x09
    static let txPower: UInt8 = 0x0A
    static let serviceData16: UInt8 = 0x16
    static let appearance: UInt8 = 0x19
    static let serviceData32: UInt8 = 0x20
    static let serviceData128: UInt8 = 0x21
    static let manufacturerData: UInt8 = 0xFF
}

/// The advertising and scan response data for legacy PDUs (31 bytes each), laid out best effort
/// the way a phone's peripheral API does: flags, the passive scanners' service data and the
/// service UUIDs first in the advertising packet, the rest wherever it fits; what fits nowhere is
/// named in `notFitted`.
public struct AdvertisingPayload: Equatable, Sendable {
    public static let legacyCapacity = 31

    public var advertisingData: [UInt8] = []
    public var scanResponseData: [UInt8] = []
    /// Each field (or part of one) that was left out or cut, e.g. "service UUID 180D" or
    /// "local name (shortened to 12 of 20 bytes)". Every entry is logged.
    public var notFitted: [String] = []

    /// - Parameters:
    ///   - txPower: the controller's advertising TX power, when the settings ask for it.
    ///   - limitedDiscoverable: a pairing window is open: the flags say LE Limited Discoverable
    ///     (0x05) instead of LE General Discoverable (0x06); phones list both alike.
    public init(settings: AdvertisingSettings, txPower: Int8?, limitedDiscoverable: Bool = false) {
        // LE Limited or General Discoverable, BR/EDR not supported (Core Supplement Part A 1.3).
        advertisingData = Self.field(ADType.flags, [limitedDiscoverable ? 0x05 : 0x06])
        if let (uuid, data) = settings.passiveServiceData {
            let field = Self.serviceDataField(uuid, data)
            if field.count <= advertisingRoom {
                advertisingData += field
            } else {
                notFitted.append("\(Self.serviceDataName(uuid)) (\(field.count) bytes; the advertising data holds \(advertisingRoom))")
            }
        }
        placeUUIDs(settings.serviceUUIDs)
        if let name = settings.localName, !name.isEmpty { placeName(Array(name.utf8)) }
        if let appearance = settings.appearance {
            place(
                Self.field(ADType.appearance, [UInt8(appearance & 0xFF), UInt8(appearance >> 8)]),
                named: "appearance")
        }
        if settings.includeTxPower, let txPower {
            place(Self.field(ADType.txPower, [UInt8(bitPattern: txPower)]), named: "TX power")
        }
        for (uuid, data) in settings.serviceData {
            place(Self.serviceDataField(uuid, data), named: Self.serviceDataName(uuid))
        }
        if let (company, data) = settings.manufacturerData {
            place(
                Self.field(ADType.manufacturerData, [UInt8(company & 0xFF), UInt8(company >> 8)] + data),
                named: "manufacturer data")
        }
    }

    static func field(_ type: UInt8, _ value: [UInt8]) -> [UInt8] {
        [UInt8(value.count + 1), type] + value
    }

    /// A Service Data field (AD type 0x16, 0x20 or 0x21 by the UUID's size).
    static func serviceDataField(_ uuid: BluetoothUUID, _ data: [UInt8]) -> [UInt8] {
        if let short = uuid.uint16Value {
            return field(ADType.serviceData16, [UInt8(short & 0xFF), UInt8(short >> 8)] + data)
        } else if let value = uuid.uint32Value {
            return field(ADType.serviceData32, (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } + data)
        }
        return field(ADType.serviceData128, uuid.uint128Bytes + data)
    }

    /// How `notFitted` names a service data field.
    public static func serviceDataName(_ uuid: BluetoothUUID) -> String { "service data for \(uuid)" }

    private var advertisingRoom: Int { Self.legacyCapacity - advertisingData.count }
    private var scanResponseRoom: Int { Self.legacyCapacity - scanResponseData.count }

    private mutating func place(_ field: [UInt8], named name: String) {
        if field.count <= advertisingRoom {
            advertisingData += field
        } else if field.count <= scanResponseRoom {
            scanResponseData += field
        } else {
            notFitted.append("\(name) (\(field.count) bytes)")
        }
    }

    /// UUIDs go in lists by size. A list that fits whole goes in as "complete"; otherwise as
    /// many as fit go in each packet as "incomplete" lists, and the rest are reported.
    private mutating func placeUUIDs(_ uuids: [BluetoothUUID]) {
        var seen = Set<BluetoothUUID>()
        let unique = uuids.filter { seen.insert($0).inserted }
        let groups: [(complete: UInt8, incomplete: UInt8, size: Int, members: [BluetoothUUID])] = [
            (ADType.complete16, ADType.incomplete16, 2, unique.filter { $0.uint16Value != nil }),
            (
                ADType.complete32, ADType.incomplete32, 4,
                unique.filter { $0.uint16Value == nil && $0.uint32Value != nil }
            ),
            (ADType.complete128, ADType.incomplete128, 16, unique.filter { $0.uint32Value == nil })
        ]
        for group in groups where !group.members.isEmpty {
            func bytes(_ uuid: BluetoothUUID) -> [UInt8] {
                if group.size == 16 { return uuid.uint128Bytes }
                let value = uuid.uint32Value!
                return (0..<group.size).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
            }
            let whole = Self.field(group.complete, group.members.flatMap(bytes))
            if whole.count <= advertisingRoom {
                advertisingData += whole
                continue
            }
            var remaining = group.members[...]
            for target in 0..<2 {
                let room = target == 0 ? advertisingRoom : scanResponseRoom
                let count = min(remaining.count, max(room - 2, 0) / group.size)
                guard count > 0 else { continue }
                let taken = remaining.prefix(count)
                remaining = remaining.dropFirst(count)
                let type =
                    remaining.isEmpty && target == 1 && taken.count == group.members.count
                    ? group.complete : group.incomplete
                let field = Self.field(type, taken.flatMap(bytes))
                if target == 0 { advertisingData += field } else { scanResponseData += field }
            }
            for uuid in remaining { notFitted.append("service UUID \(uuid)") }
        }
    }

    /// The complete name where it fits (advertising packet first, so a scanner without scan
    /// requests still sees it); otherwise shortened in the packet with more room.
    private mutating func placeName(_ name: [UInt8]) {
        let complete = Self.field(ADType.completeName, name)
        if complete.count <= advertisingRoom {
            advertisingData += complete
            return
        }
        if complete.count <= scanResponseRoom {
            scanResponseData += complete
            return
        }
        let useAdvertising = advertisingRoom > scanResponseRoom
        let room = (useAdvertising ? advertisingRoom : scanResponseRoom) - 2
        guard room > 0 else {
            notFitted.append("local name (\(name.count) bytes)")
            return
        }
        let shortened = Self.utf8Prefix(name, maxBytes: room)
        let field = Self.field(ADType.shortenedName, shortened)
        if useAdvertising { advertisingData += field } else { scanResponseData += field }
        notFitted.append("local name (shortened to \(shortened.count) of \(name.count) bytes)")
    }

    /// The longest prefix of `bytes` within `maxBytes` that does not split a UTF-8 character.
    static func utf8Prefix(_ bytes: [UInt8], maxBytes: Int) -> [UInt8] {
        var end = min(maxBytes, bytes.count)
        while end > 0, end < bytes.count, bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return Array(bytes[..<end])
    }
}
