import BluetoothCore
import BluetoothHCI
import Logging
import StateFile

/// What bring-up learned about the controller.
public struct ControllerInfo: Equatable, Sendable {
    public var version: LocalVersion
    public var publicAddress: BluetoothAddress
    /// The address centrals see: the public one, or the stored static random one.
    public var address: BluetoothAddress
    public var commands: SupportedCommands
    public var leFeatures: LEFeatures
    public var buffers: ACLBufferSize
    public var advertisingTxPower: Int8?

    public var usesExtendedAdvertising: Bool {
        leFeatures.extendedAdvertising && commands.leSetExtendedAdvertisingParameters
    }
    public var canSetDataLength: Bool { leFeatures.dataLengthExtension && commands.leSetDataLength }
    public var canSet2MPHY: Bool { leFeatures.le2MPHY && commands.leSetPHY }
}

/// Bring-up's conversation with a controller just opened: reset it, learn what it is and can do,
/// set the event masks and the address centrals will see.
enum ControllerBringUp {
    /// Events the host handles (Vol 4 Part E 7.3.1): Disconnection Complete (bit 4), Encryption
    /// Change (7), Read Remote Version Complete (11), Hardware Error (15), Data Buffer Overflow
    /// (25), Encryption Key Refresh Complete (47), LE Meta (61).
    static let eventMask = mask(bits: [4, 7, 11, 15, 25, 47, 61])
    /// LE subevents (Vol 4 Part E 7.8.1): Connection Complete (bit 0), Advertising Report (1),
    /// Connection Update Complete (2), Read Remote Features Complete (3), LTK Request (4), Data
    /// Length Change (6), Enhanced Connection Complete (9), PHY Update Complete (11), Advertising
    /// Set Terminated (17). Remote Connection Parameter Request (5) stays off so the controller
    /// answers the central's parameter requests itself.
    static let leEventMask = mask(bits: [0, 1, 2, 3, 4, 6, 9, 11, 17])

    /// A 64-bit event mask with `bits` set (one long `|` chain is too much for some type checkers).
    static func mask(bits: [Int]) -> UInt64 { bits.reduce(0) { $0 | 1 << UInt64($1) } }

    /// What the controller is, once it is set up; nil when it has no LE support. `readTxPower`
    /// reads its advertising TX power for advertising data that includes it.
    nonisolated(nonsending) static func run(
        on commands: HCICommandChannel, stateDirectory: String, stateWriter: StateFileWriter, readTxPower: Bool,
        logger: Logger
    ) async throws -> ControllerInfo? {
        try await commands.executeChecked(.reset)
        let version = try LocalVersion(body: try await commands.executeChecked(.readLocalVersion))
        let supported = try SupportedCommands(body: try await commands.executeChecked(.readLocalSupportedCommands))
        let leFeaturesResult = try await commands.execute(.leReadLocalSupportedFeatures)
        guard leFeaturesResult.status == .success else {
            logger.error("the controller has no LE support (LE Read Local Supported Features: \(leFeaturesResult.status))")
            return nil
        }
        let leFeatures = try LEFeatures(body: leFeaturesResult.body)
        let addressBody = try await commands.executeChecked(.readBDADDR)
        guard addressBody.count >= 6 else { throw HostError("Read BD_ADDR returned \(addressBody.count) bytes") }
        let publicAddress = BluetoothAddress(littleEndianBytes: Array(addressBody.prefix(6)))
        var buffers = try ACLBufferSize(leReadBufferSizeBody: try await commands.executeChecked(.leReadBufferSize))
        if buffers.isShared {
            buffers = try ACLBufferSize(readBufferSizeBody: try await commands.executeChecked(.readBufferSize))
        }
        guard !buffers.isShared else { throw HostError("the controller reports no ACL data buffers") }
        try await commands.executeChecked(.setEventMask(Self.eventMask))
        try await commands.executeChecked(.leSetEventMask(Self.leEventMask))

        var info = ControllerInfo(
            version: version, publicAddress: publicAddress, address: publicAddress,
            commands: supported, leFeatures: leFeatures, buffers: buffers)
        if publicAddress == .zero {
            info.address = try await StaticAddressStore(directory: stateDirectory).loadOrCreate(writer: stateWriter)
            if !info.usesExtendedAdvertising {
                try await commands.executeChecked(.leSetRandomAddress(info.address))
            }
        }
        if readTxPower {
            let result = try await commands.execute(.leReadAdvertisingTxPower)
            if result.status == .success, let level = result.body.first {
                info.advertisingTxPower = Int8(bitPattern: level)
            }
        }
        logger.info(
            """
            controller ready: Bluetooth \(version.coreVersionName), manufacturer \(version.manufacturer), \
            address \(info.address)\(publicAddress == .zero ? " (static random, stored)" : ""), \
            \(buffers.packetCount) ACL buffers of \(buffers.dataLength) bytes, \
            extended advertising \(info.usesExtendedAdvertising ? "yes" : "no"), \
            data length extension \(info.canSetDataLength ? "yes" : "no"), 2M PHY \(info.canSet2MPHY ? "yes" : "no")
            """)
        return info
    }
}
