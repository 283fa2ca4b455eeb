import BluetoothCore

/// A command's outcome as a Command Complete event reports it: the status byte every command
/// returns first, and the rest of the return parameters.
public struct HCICommandResult: Equatable, Sendable {
    public var status: HCIStatus
    public var body: [UInt8]

    public init(status: HCIStatus, body: [UInt8] = []) {
        self.status = status
        self.body = body
    }

    /// Splits Command Complete return parameters. An empty list (some controllers answer
    /// commands without return parameters this way) counts as success.
    public init(returnParameters: [UInt8]) {
        status = HCIStatus(rawValue: returnParameters.first ?? 0)
        body = Array(returnParameters.dropFirst())
    }
}

/// Read Local Version Information (Vol 4 Part E 7.4.1).
public struct LocalVersion: Equatable, Sendable {
    public var hciVersion: UInt8
    public var hciRevision: UInt16
    public var lmpVersion: UInt8
    public var manufacturer: UInt16
    public var lmpSubversion: UInt16

    public init(body: [UInt8]) throws {
        var reader = ByteReader(body)
        hciVersion = try reader.readUInt8()
        hciRevision = try reader.readUInt16()
        lmpVersion = try reader.readUInt8()
        manufacturer = try reader.readUInt16()
        lmpSubversion = try reader.readUInt16()
    }

    /// "5.4" for version code 0x0D and so on (Assigned Numbers 2.1).
    public var coreVersionName: String {
        let names: [UInt8: String] = [
            6: "4.0", 7: "4.1", 8: "4.2", 9: "5.0", 10: "5.1", 11: "5.2", 12: "5.3", 13: "5.4",
            14: "6.0"
        ]
        return names[hciVersion] ?? "code \(hciVersion)"
    }
}

/// The Supported_Commands bit field (Vol 4 Part E 6.27): 64 octets, one bit per command.
public struct SupportedCommands: Equatable, Sendable {
    public var octets: [UInt8]

    public init(body: [UInt8]) throws {
        guard body.count >= 64 else {
            throw HCIDecodingError.lengthMismatch(
                what: "Supported_Commands", declared: 64,
                actual: body.count)
        }
        octets = Array(body.prefix(64))
    }

    public func contains(octet: Int, bit: Int) -> Bool { octets[octet] & (1 << bit) != 0 }

    public var leSetDataLength: Bool { contains(octet: 33, bit: 6) }
    public var leSetPHY: Bool { contains(octet: 35, bit: 6) }
    public var leSetExtendedAdvertisingParameters: Bool { contains(octet: 36, bit: 2) }
}

/// LE features of the local controller (Vol 6 Part B 4.6), the bits the host acts on.
public struct LEFeatures: Equatable, Sendable {
    public var rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public init(body: [UInt8]) throws {
        var reader = ByteReader(body)
        rawValue = try reader.readUInt64()
    }

    public var dataLengthExtension: Bool { rawValue & (1 << 5) != 0 }
    public var le2MPHY: Bool { rawValue & (1 << 8) != 0 }
    public var extendedAdvertising: Bool { rawValue & (1 << 12) != 0 }
}

/// A controller's data buffers for host → controller ACL: the largest fragment it takes and how
/// many it holds at once (Read Buffer Size 7.4.5, LE Read Buffer Size 7.8.2).
public struct ACLBufferSize: Equatable, Sendable {
    public var dataLength: Int
    public var packetCount: Int

    public init(dataLength: Int, packetCount: Int) {
        self.dataLength = dataLength
        self.packetCount = packetCount
    }

    /// Read Buffer Size: ACL length (2), SCO length (1), ACL count (2), SCO count (2).
    public init(readBufferSizeBody body: [UInt8]) throws {
        var reader = ByteReader(body)
        dataLength = Int(try reader.readUInt16())
        _ = try reader.readUInt8()
        packetCount = Int(try reader.readUInt16())
    }

    /// LE Read Buffer Size: LE ACL length (2), LE ACL count (1). Zero means "shared with BR/EDR".
    public init(leReadBufferSizeBody body: [UInt8]) throws {
        var reader = ByteReader(body)
        dataLength = Int(try reader.readUInt16())
        packetCount = Int(try reader.readUInt8())
    }

    public var isShared: Bool { dataLength == 0 || packetCount == 0 }
}
