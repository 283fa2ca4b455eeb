import BluetoothHCI
import Logging

/// Advertising, legacy or on one extended advertising set: what to advertise, the data on the
/// controller now, and whether it is advertising; the commands that set it up, turn it on and off,
/// and replace its data in flight.
///
/// Owned by `PeripheralHost` and used only on its executor, the event loop. The host says which
/// controller the session has (nil before bring-up) and how many centrals are connected.
final class Advertiser {
    /// The one advertising set gattway uses when the controller does extended advertising.
    static let handle: UInt8 = 0

    private let commands: HCICommandChannel
    private let maxCentrals: Int
    private let eventSink: HostEventOutlet
    private let logger: Logger
    /// What to advertise; nil when advertising is off by the program's wish.
    private(set) var settings: AdvertisingSettings?
    /// The data given to the controller in this session; nil before it was configured.
    private var currentPayload: AdvertisingPayload?
    private(set) var isAdvertising = false
    /// The flags say LE Limited Discoverable (a pairing window is open) rather than General.
    private var limitedDiscoverable = false

    init(
        settings: AdvertisingSettings?, commands: HCICommandChannel, maxCentrals: Int,
        eventSink: HostEventOutlet, logger: Logger
    ) {
        self.settings = settings
        self.commands = commands
        self.maxCentrals = maxCentrals
        self.eventSink = eventSink
        self.logger = logger
    }

    /// Starts (or restarts, with new settings).
    nonisolated(nonsending) func start(_ settings: AdvertisingSettings, on info: ControllerInfo?, connected: Int) async throws {
        self.settings = settings
        if isAdvertising { try await disable(on: info) }
        try await configureAndEnable(on: info, connected: connected)
    }

    /// Replaces the advertised data without stopping (see `PeripheralHost.updateAdvertisingData`).
    nonisolated(nonsending) func update(_ settings: AdvertisingSettings, on info: ControllerInfo?) async throws {
        guard self.settings != nil else {
            throw HostError("not advertising: nothing to update (start advertising first)")
        }
        self.settings = settings
        try await replacePayload(on: info)
    }

    /// Switches the flags between LE Limited and LE General Discoverable, in flight like `update`.
    nonisolated(nonsending) func setLimitedDiscoverable(_ limited: Bool, on info: ControllerInfo?) async throws {
        guard limited != limitedDiscoverable else { return }
        limitedDiscoverable = limited
        try await replacePayload(on: info)
    }

    private func makePayload(_ settings: AdvertisingSettings, _ info: ControllerInfo) -> AdvertisingPayload {
        AdvertisingPayload(settings: settings, txPower: info.advertisingTxPower, limitedDiscoverable: limitedDiscoverable)
    }

    /// Gives the controller the data of the current settings when it differs from what it has.
    private nonisolated(nonsending) func replacePayload(on info: ControllerInfo?) async throws {
        guard let settings, let info, currentPayload != nil else { return }
        let payload = makePayload(settings, info)
        if payload.notFitted != currentPayload?.notFitted {
            for field in payload.notFitted {
                logger.warning("advertising: \(field) does not fit in 31 bytes of advertising and scan response data")
            }
        }
        guard payload != currentPayload else { return }
        if info.usesExtendedAdvertising {
            try await commands.executeChecked(.leSetExtendedAdvertisingData(handle: Self.handle, payload.advertisingData))
            try await commands.executeChecked(.leSetExtendedScanResponseData(handle: Self.handle, payload.scanResponseData))
        } else {
            try await commands.executeChecked(.leSetAdvertisingData(payload.advertisingData))
            try await commands.executeChecked(.leSetScanResponseData(payload.scanResponseData))
        }
        currentPayload = payload
    }

    /// Stops, and stays off until the next `start`.
    nonisolated(nonsending) func stop(on info: ControllerInfo?) async throws {
        settings = nil
        try await disable(on: info)
    }

    nonisolated(nonsending) func configureAndEnable(on info: ControllerInfo?, connected: Int) async throws {
        guard let settings, let info else { return }
        let payload = makePayload(settings, info)
        for field in payload.notFitted {
            logger.warning("advertising: \(field) does not fit in 31 bytes of advertising and scan response data")
        }
        let ownAddressType = info.address.kind
        let interval = settings.intervalUnits
        if info.usesExtendedAdvertising {
            let handle = Self.handle
            try await commands.executeChecked(
                .leSetExtendedAdvertisingParameters(
                    handle: handle, intervalMin: UInt32(interval), intervalMax: UInt32(interval),
                    ownAddressType: ownAddressType))
            if ownAddressType == .random {
                try await commands.executeChecked(.leSetAdvertisingSetRandomAddress(handle: handle, info.address))
            }
            try await commands.executeChecked(.leSetExtendedAdvertisingData(handle: handle, payload.advertisingData))
            try await commands.executeChecked(.leSetExtendedScanResponseData(handle: handle, payload.scanResponseData))
        } else {
            try await commands.executeChecked(
                .leSetAdvertisingParameters(
                    intervalMin: interval, intervalMax: interval, type: .connectableUndirected,
                    ownAddressType: ownAddressType))
            try await commands.executeChecked(.leSetAdvertisingData(payload.advertisingData))
            try await commands.executeChecked(.leSetScanResponseData(payload.scanResponseData))
        }
        currentPayload = payload
        try await enable(on: info, connected: connected)
    }

    /// Turns advertising on with the data already configured, unless `maxCentrals` are connected.
    nonisolated(nonsending) func enable(on info: ControllerInfo?, connected: Int) async throws {
        guard settings != nil, let info, let payload = currentPayload else { return }
        guard connected < maxCentrals else {
            logger.info("not advertising: \(connected) of \(maxCentrals) centrals connected")
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
            eventSink(.advertisingStarted(payload, extended: info.usesExtendedAdvertising))
        }
        do {
            if info.usesExtendedAdvertising {
                try await commands.executeChecked(.leSetExtendedAdvertisingEnable(true, handle: Self.handle))
            } else {
                try await commands.executeChecked(.leSetAdvertisingEnable(true))
            }
        } catch {
            markStopped()
            throw error
        }
    }

    nonisolated(nonsending) func disable(on info: ControllerInfo?) async throws {
        guard let info else { return }
        if info.usesExtendedAdvertising {
            try await commands.executeChecked(.leSetExtendedAdvertisingEnable(false, handle: Self.handle))
        } else {
            try await commands.executeChecked(.leSetAdvertisingEnable(false))
        }
        markStopped()
    }

    /// The controller stopped advertising (a central connected, or the set terminated).
    func markStopped() {
        guard isAdvertising else { return }
        isAdvertising = false
        logger.info("advertising stopped")
        eventSink(.advertisingStopped)
    }

    /// The controller is gone: nothing is configured on the next one yet.
    func sessionEnded() {
        currentPayload = nil
        isAdvertising = false
    }
}
