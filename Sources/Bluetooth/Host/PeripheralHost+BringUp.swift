import BluetoothCore
import BluetoothGATT
import BluetoothHCI

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

extension PeripheralHost {
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

    /// Reset, learn the controller, set masks and address, then power on and advertise.
    func bringUp() async throws {
        try await executeChecked(.reset)
        let version = try LocalVersion(body: try await executeChecked(.readLocalVersion))
        let commands = try SupportedCommands(body: try await executeChecked(.readLocalSupportedCommands))
        let leFeaturesResult = try await execute(.leReadLocalSupportedFeatures)
        guard leFeaturesResult.status == .success else {
            logger.error("the controller has no LE support (LE Read Local Supported Features: \(leFeaturesResult.status))")
            await setState(.unsupported)
            return
        }
        let leFeatures = try LEFeatures(body: leFeaturesResult.body)
        let addressBody = try await executeChecked(.readBDADDR)
        guard addressBody.count >= 6 else { throw HostError("Read BD_ADDR returned \(addressBody.count) bytes") }
        let publicAddress = BluetoothAddress(littleEndianBytes: Array(addressBody.prefix(6)))
        var buffers = try ACLBufferSize(leReadBufferSizeBody: try await executeChecked(.leReadBufferSize))
        if buffers.isShared {
            buffers = try ACLBufferSize(readBufferSizeBody: try await executeChecked(.readBufferSize))
        }
        guard !buffers.isShared else { throw HostError("the controller reports no ACL data buffers") }
        try await executeChecked(.setEventMask(Self.eventMask))
        try await executeChecked(.leSetEventMask(Self.leEventMask))

        var info = ControllerInfo(
            version: version, publicAddress: publicAddress, address: publicAddress,
            commands: commands, leFeatures: leFeatures, buffers: buffers)
        if publicAddress == .zero {
            info.address = try StaticAddressStore(directory: configuration.stateDirectory).loadOrCreate()
            if !info.usesExtendedAdvertising {
                try await executeChecked(.leSetRandomAddress(info.address))
            }
        }
        if configuration.advertising?.includeTxPower == true || advertisingSettings?.includeTxPower == true {
            let result = try await execute(.leReadAdvertisingTxPower)
            if result.status == .success, let level = result.body.first {
                info.advertisingTxPower = Int8(bitPattern: level)
            }
        }
        controller = info
        guard let transport else { throw HostError("no controller") }
        transmitter.start(transport: transport, buffers: buffers)
        logger.info(
            """
            controller ready: Bluetooth \(version.coreVersionName), manufacturer \(version.manufacturer), \
            address \(info.address)\(publicAddress == .zero ? " (static random, stored)" : ""), \
            \(buffers.packetCount) ACL buffers of \(buffers.dataLength) bytes, \
            extended advertising \(info.usesExtendedAdvertising ? "yes" : "no"), \
            data length extension \(info.canSetDataLength ? "yes" : "no"), 2M PHY \(info.canSet2MPHY ? "yes" : "no")
            """)
        await setState(.poweredOn)
        if !grantedTransmitCredits {
            // Once per host: later the credits circulate (delivered or dropped updates return).
            grantedTransmitCredits = true
            await server.transmitCreditsAvailable(configuration.transmitQueueCapacity)
        }
        if advertisingSettings != nil { try await configureAndEnableAdvertising() }
    }

    /// The one advertising set gattway uses when the controller does extended advertising.
    static let advertisingHandle: UInt8 = 0

    func configureAndEnableAdvertising() async throws {
        guard let settings = advertisingSettings, let info = controller else { return }
        let payload = AdvertisingPayload(settings: settings, txPower: info.advertisingTxPower)
        for field in payload.notFitted {
            logger.warning("advertising: \(field) does not fit in 31 bytes of advertising and scan response data")
        }
        let ownAddressType = info.address.kind
        let interval = settings.intervalUnits
        if info.usesExtendedAdvertising {
            let handle = Self.advertisingHandle
            try await executeChecked(
                .leSetExtendedAdvertisingParameters(
                    handle: handle, intervalMin: UInt32(interval), intervalMax: UInt32(interval),
                    ownAddressType: ownAddressType))
            if ownAddressType == .random {
                try await executeChecked(.leSetAdvertisingSetRandomAddress(handle: handle, info.address))
            }
            try await executeChecked(.leSetExtendedAdvertisingData(handle: handle, payload.advertisingData))
            try await executeChecked(.leSetExtendedScanResponseData(handle: handle, payload.scanResponseData))
        } else {
            try await executeChecked(
                .leSetAdvertisingParameters(
                    intervalMin: interval, intervalMax: interval, type: .connectableUndirected,
                    ownAddressType: ownAddressType))
            try await executeChecked(.leSetAdvertisingData(payload.advertisingData))
            try await executeChecked(.leSetScanResponseData(payload.scanResponseData))
        }
        currentPayload = payload
        try await enableAdvertising()
    }

    /// Turns advertising on with the data already configured, unless `maxCentrals` are connected.
    func enableAdvertising() async throws {
        guard advertisingSettings != nil, let info = controller, let payload = currentPayload else { return }
        guard connections.count < configuration.maxCentrals else {
            logger.info("not advertising: \(connections.count) of \(configuration.maxCentrals) centrals connected")
            return
        }
        // Marked before the answer: a central may connect right behind it, and its
        // Connection Complete (which stops advertising) must find the flag already set.
        if !isAdvertising {
            isAdvertising = true
            let kind = info.usesExtendedAdvertising ? "extended set, legacy PDUs" : "legacy"
            logger.info(
                """
                advertising (\(kind)): data \(payload.advertisingData.hexString), \
                scan response \(payload.scanResponseData.hexString)
                """)
            eventSink.yield(.advertisingStarted(payload, extended: info.usesExtendedAdvertising))
        }
        do {
            if info.usesExtendedAdvertising {
                try await executeChecked(.leSetExtendedAdvertisingEnable(true, handle: Self.advertisingHandle))
            } else {
                try await executeChecked(.leSetAdvertisingEnable(true))
            }
        } catch {
            markAdvertisingStopped()
            throw error
        }
    }

    func disableAdvertising() async throws {
        guard let info = controller else { return }
        if info.usesExtendedAdvertising {
            try await executeChecked(.leSetExtendedAdvertisingEnable(false, handle: Self.advertisingHandle))
        } else {
            try await executeChecked(.leSetAdvertisingEnable(false))
        }
        markAdvertisingStopped()
    }

    func markAdvertisingStopped() {
        guard isAdvertising else { return }
        isAdvertising = false
        logger.info("advertising stopped")
        eventSink.yield(.advertisingStopped)
    }

    /// Restarts advertising after a connection or disconnection, logging rather than failing.
    func readvertise() async {
        guard state == .poweredOn else { return }
        do {
            try await enableAdvertising()
        } catch {
            logger.error("could not restart advertising: \(error)")
        }
    }
}
