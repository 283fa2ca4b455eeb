import BluetoothCore

/// A command opcode: OGF in the top 6 bits, OCF in the low 10 (Core Vol 4 Part E 5.4.1).
public struct HCIOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(ogf: UInt16, ocf: UInt16) { rawValue = ogf << 10 | ocf & 0x03FF }

    public var ogf: UInt16 { rawValue >> 10 }
    public var ocf: UInt16 { rawValue & 0x03FF }

    public static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    public static let readLocalVersion = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    public static let readLocalSupportedCommands = HCIOpcode(ogf: 0x04, ocf: 0x0002)
    public static let readLocalSupportedFeatures = HCIOpcode(ogf: 0x04, ocf: 0x0003)
    public static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDADDR = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    public static let leReadLocalSupportedFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    public static let leReadAdvertisingTxPower = HCIOpcode(ogf: 0x08, ocf: 0x0007)
    public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    public static let leSetScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0009)
    public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    public static let leConnectionUpdate = HCIOpcode(ogf: 0x08, ocf: 0x0013)
    public static let leLongTermKeyRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x001A)
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x001B)
    public static let leSetDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0022)
    public static let leSetPHY = HCIOpcode(ogf: 0x08, ocf: 0x0032)
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0035)
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    public static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    public static let leSetExtendedScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0038)
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    public static let leRemoveAdvertisingSet = HCIOpcode(ogf: 0x08, ocf: 0x003C)

    public var description: String {
        let names: [HCIOpcode: String] = [
            .disconnect: "Disconnect", .setEventMask: "Set Event Mask", .reset: "Reset",
            .readLocalVersion: "Read Local Version Information",
            .readLocalSupportedCommands: "Read Local Supported Commands",
            .readLocalSupportedFeatures: "Read Local Supported Features",
            .readBufferSize: "Read Buffer Size", .readBDADDR: "Read BD_ADDR",
            .leSetEventMask: "LE Set Event Mask", .leReadBufferSize: "LE Read Buffer Size",
            .leReadLocalSupportedFeatures: "LE Read Local Supported Features",
            .leSetRandomAddress: "LE Set Random Address",
            .leSetAdvertisingParameters: "LE Set Advertising Parameters",
            .leReadAdvertisingTxPower: "LE Read Advertising Physical Channel Tx Power",
            .leSetAdvertisingData: "LE Set Advertising Data",
            .leSetScanResponseData: "LE Set Scan Response Data",
            .leSetAdvertisingEnable: "LE Set Advertising Enable",
            .leConnectionUpdate: "LE Connection Update", .leSetDataLength: "LE Set Data Length",
            .leLongTermKeyRequestReply: "LE Long Term Key Request Reply",
            .leLongTermKeyRequestNegativeReply: "LE Long Term Key Request Negative Reply",
            .leSetPHY: "LE Set PHY",
            .leSetAdvertisingSetRandomAddress: "LE Set Advertising Set Random Address",
            .leSetExtendedAdvertisingParameters: "LE Set Extended Advertising Parameters",
            .leSetExtendedAdvertisingData: "LE Set Extended Advertising Data",
            .leSetExtendedScanResponseData: "LE Set Extended Scan Response Data",
            .leSetExtendedAdvertisingEnable: "LE Set Extended Advertising Enable",
            .leRemoveAdvertisingSet: "LE Remove Advertising Set"
        ]
        let hex = String(rawValue, radix: 16)
        let code = "0x" + String(repeating: "0", count: 4 - hex.count) + hex
        return names[self].map { "\($0) (\(code))" } ?? code
    }
}

/// An HCI command packet (Core Vol 4 Part E 5.4.1): an opcode and its parameters.
///
/// The static constructors lay out each command's parameters as Vol 4 Part E 7 specifies.
public struct HCICommand: Equatable, Sendable {
    public var opcode: HCIOpcode
    public var parameters: [UInt8]

    public init(opcode: HCIOpcode, parameters: [UInt8] = []) {
        precondition(parameters.count <= 255, "HCI command parameters are at most 255 bytes")
        self.opcode = opcode
        self.parameters = parameters
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 3 + parameters.count)
        writer.write(opcode.rawValue)
        writer.write(UInt8(parameters.count))
        writer.write(contentsOf: parameters)
        return writer.bytes
    }

    public init(decoding bytes: ArraySlice<UInt8>) throws(HCIDecodingError) {
        guard bytes.count >= 3 else { throw .truncated(what: "HCI command header") }
        let start = bytes.startIndex
        let length = Int(bytes[start + 2])
        guard bytes.count - 3 == length else {
            throw .lengthMismatch(what: "HCI command", declared: length, actual: bytes.count - 3)
        }
        self.init(
            opcode: HCIOpcode(rawValue: UInt16(bytes[start]) | UInt16(bytes[start + 1]) << 8),
            parameters: Array(bytes.dropFirst(3)))
    }

    private static func build(_ opcode: HCIOpcode, _ body: (inout ByteWriter) -> Void) -> HCICommand {
        var writer = ByteWriter()
        body(&writer)
        return HCICommand(opcode: opcode, parameters: writer.bytes)
    }

    // MARK: Controller and baseband, informational

    public static let reset = HCICommand(opcode: .reset)
    public static let readLocalVersion = HCICommand(opcode: .readLocalVersion)
    public static let readLocalSupportedCommands = HCICommand(opcode: .readLocalSupportedCommands)
    public static let readLocalSupportedFeatures = HCICommand(opcode: .readLocalSupportedFeatures)
    public static let readBufferSize = HCICommand(opcode: .readBufferSize)
    public static let readBDADDR = HCICommand(opcode: .readBDADDR)
    public static let leReadBufferSize = HCICommand(opcode: .leReadBufferSize)
    public static let leReadLocalSupportedFeatures = HCICommand(opcode: .leReadLocalSupportedFeatures)
    public static let leReadAdvertisingTxPower = HCICommand(opcode: .leReadAdvertisingTxPower)

    public static func setEventMask(_ mask: UInt64) -> HCICommand {
        build(.setEventMask) { $0.write(mask) }
    }

    public static func leSetEventMask(_ mask: UInt64) -> HCICommand {
        build(.leSetEventMask) { $0.write(mask) }
    }

    public static func disconnect(handle: UInt16, reason: HCIStatus) -> HCICommand {
        build(.disconnect) {
            $0.write(handle)
            $0.write(reason.rawValue)
        }
    }

    // MARK: Legacy advertising

    public static func leSetRandomAddress(_ address: BluetoothAddress) -> HCICommand {
        build(.leSetRandomAddress) { $0.write(contentsOf: address.bytes) }
    }

    /// Advertising_Type values (Vol 4 Part E 7.8.5).
    public enum LegacyAdvertisingType: UInt8, Sendable {
        /// ADV_IND: connectable and scannable undirected.
        case connectableUndirected = 0x00
        case scannableUndirected = 0x02
        case nonConnectableUndirected = 0x03
    }

    /// Own address type: 0x00 public, 0x01 random.
    public static func leSetAdvertisingParameters(
        intervalMin: UInt16, intervalMax: UInt16, type: LegacyAdvertisingType,
        ownAddressType: BluetoothAddress.Kind, channelMap: UInt8 = 0x07
    ) -> HCICommand {
        build(.leSetAdvertisingParameters) {
            $0.write(intervalMin)
            $0.write(intervalMax)
            $0.write(type.rawValue)
            $0.write(ownAddressType.rawValue)
            $0.write(UInt8(0))  // peer address type, unused for undirected advertising
            $0.write(contentsOf: [UInt8](repeating: 0, count: 6))
            $0.write(channelMap)
            $0.write(UInt8(0))  // filter policy: anyone may scan and connect
        }
    }

    /// Legacy advertising and scan response data always carry 31 bytes, zero padded.
    private static func legacyData(_ opcode: HCIOpcode, _ data: [UInt8]) -> HCICommand {
        precondition(data.count <= 31, "legacy advertising data is at most 31 bytes")
        return build(opcode) {
            $0.write(UInt8(data.count))
            $0.write(contentsOf: data)
            $0.write(contentsOf: [UInt8](repeating: 0, count: 31 - data.count))
        }
    }

    public static func leSetAdvertisingData(_ data: [UInt8]) -> HCICommand {
        legacyData(.leSetAdvertisingData, data)
    }

    public static func leSetScanResponseData(_ data: [UInt8]) -> HCICommand {
        legacyData(.leSetScanResponseData, data)
    }

    public static func leSetAdvertisingEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: .leSetAdvertisingEnable, parameters: [enable ? 1 : 0])
    }

    // MARK: Extended advertising (Vol 4 Part E 7.8.53-56)

    public static func leSetAdvertisingSetRandomAddress(
        handle: UInt8, _ address: BluetoothAddress
    )
        -> HCICommand
    {
        build(.leSetAdvertisingSetRandomAddress) {
            $0.write(handle)
            $0.write(contentsOf: address.bytes)
        }
    }

    /// Parameters for a legacy-PDU connectable, scannable advertising set (properties 0x0013:
    /// connectable, scannable, legacy), so every scanner sees it while the controller manages it
    /// as an extended set.
    public static func leSetExtendedAdvertisingParameters(
        handle: UInt8, intervalMin: UInt32, intervalMax: UInt32,
        ownAddressType: BluetoothAddress.Kind, channelMap: UInt8 = 0x07
    ) -> HCICommand {
        build(.leSetExtendedAdvertisingParameters) {
            $0.write(handle)
            $0.write(UInt16(0x0013))
            $0.writeUInt24(intervalMin)
            $0.writeUInt24(intervalMax)
            $0.write(channelMap)
            $0.write(ownAddressType.rawValue)
            $0.write(UInt8(0))  // peer address type
            $0.write(contentsOf: [UInt8](repeating: 0, count: 6))
            $0.write(UInt8(0))  // filter policy
            $0.write(UInt8(0x7F))  // TX power: host has no preference
            $0.write(UInt8(0x01))  // primary PHY: LE 1M
            $0.write(UInt8(0))  // secondary max skip
            $0.write(UInt8(0x01))  // secondary PHY: LE 1M
            $0.write(UInt8(0))  // advertising SID
            $0.write(UInt8(0))  // scan request notifications off
        }
    }

    private static func extendedData(_ opcode: HCIOpcode, handle: UInt8, _ data: [UInt8]) -> HCICommand {
        precondition(data.count <= 251, "one extended advertising data command carries at most 251 bytes")
        return build(opcode) {
            $0.write(handle)
            $0.write(UInt8(0x03))  // operation: complete data
            $0.write(UInt8(0x01))  // fragment preference: controller should not fragment
            $0.write(UInt8(data.count))
            $0.write(contentsOf: data)
        }
    }

    public static func leSetExtendedAdvertisingData(handle: UInt8, _ data: [UInt8]) -> HCICommand {
        extendedData(.leSetExtendedAdvertisingData, handle: handle, data)
    }

    public static func leSetExtendedScanResponseData(handle: UInt8, _ data: [UInt8]) -> HCICommand {
        extendedData(.leSetExtendedScanResponseData, handle: handle, data)
    }

    public static func leSetExtendedAdvertisingEnable(_ enable: Bool, handle: UInt8) -> HCICommand {
        build(.leSetExtendedAdvertisingEnable) {
            $0.write(UInt8(enable ? 1 : 0))
            $0.write(UInt8(1))  // one set
            $0.write(handle)
            $0.write(UInt16(0))  // duration: until disabled
            $0.write(UInt8(0))  // no maximum number of events
        }
    }

    public static func leRemoveAdvertisingSet(handle: UInt8) -> HCICommand {
        HCICommand(opcode: .leRemoveAdvertisingSet, parameters: [handle])
    }

    // MARK: Connections

    public static func leSetDataLength(handle: UInt16, txOctets: UInt16, txTime: UInt16) -> HCICommand {
        build(.leSetDataLength) {
            $0.write(handle)
            $0.write(txOctets)
            $0.write(txTime)
        }
    }

    /// Asks for LE 2M in both directions (bit 1 of TX_PHYs and RX_PHYs).
    public static func leSetPHY2M(handle: UInt16) -> HCICommand {
        build(.leSetPHY) {
            $0.write(handle)
            $0.write(UInt8(0))  // all PHYs: the host states TX and RX preferences
            $0.write(UInt8(0b010))
            $0.write(UInt8(0b010))
            $0.write(UInt16(0))  // no coded PHY option
        }
    }

    // MARK: Encryption

    /// The key for an LE Long Term Key Request (Vol 4 Part E 7.8.25), least significant octet
    /// first as it goes on the wire.
    public static func leLongTermKeyRequestReply(handle: UInt16, littleEndianKey key: [UInt8]) -> HCICommand {
        precondition(key.count == 16, "a Long Term Key has 16 bytes")
        return build(.leLongTermKeyRequestReply) {
            $0.write(handle)
            $0.write(contentsOf: key)
        }
    }

    /// No key for this request (Vol 4 Part E 7.8.26): the controller refuses encryption.
    public static func leLongTermKeyRequestNegativeReply(handle: UInt16) -> HCICommand {
        build(.leLongTermKeyRequestNegativeReply) { $0.write(handle) }
    }
}
