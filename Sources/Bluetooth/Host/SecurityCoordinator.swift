import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP
import EventLoop
import Logging
import LoopClock
import StateFile

/// The Security Manager on L2CAP CID 0x0006 and the HCI side of encryption: SMP PDUs in and
/// out, LE Long Term Key Request → Reply / Negative Reply, Encryption Change and Key Refresh →
/// the GATT server's link security, bonds persisted in the state directory (keys and the CCCD
/// values of bonded centrals), Numeric Comparison waiting for the user, and the SMP timeout timer.
///
/// Owned by `PeripheralHost` and used only on its executor, the event loop.
///
/// Secrets stay out of logs and events: `SecretKey`/`LongTermKey` print redacted, and a passkey
/// fixed by the configuration is never logged or reported (only a random one, which the user must
/// see to type it).
final class SecurityCoordinator {
    private let configuration: HostConfiguration
    private let server: any ATTServer
    private let transmitter: LinkTransmitter
    private let connections: ConnectionTable
    private let eventSink: HostEventOutlet
    private let logger: Logger
    /// The pairing state machine (pure) with the bonds.
    private var manager: SecurityManager
    /// The bond file; nil when the stored file could not be read (it is left alone and bonds
    /// live in memory only).
    private let bondStore: BondStore?
    /// Writes the bond file, off the event loop.
    private let stateWriter: StateFileWriter
    /// Wakes the Security Manager at its earliest deadline (made at the first one).
    private var timer: DeadlineTimer?
    /// Connections whose pairing shows a Numeric Comparison value and waits for the user.
    private var awaitingConfirmation: Set<UInt16> = []

    init(
        configuration: HostConfiguration, server: any ATTServer, transmitter: LinkTransmitter,
        connections: ConnectionTable, eventSink: HostEventOutlet, stateWriter: StateFileWriter,
        logger: Logger
    ) {
        self.configuration = configuration
        self.stateWriter = stateWriter
        self.server = server
        self.transmitter = transmitter
        self.connections = connections
        self.eventSink = eventSink
        self.logger = logger
        (manager, bondStore) = Self.loadSecurity(configuration, logger: logger)
        if configuration.security.pairing == .window, bondStore != nil, manager.bonds.bonds.isEmpty,
            configuration.firstStartPairingWindow > .zero
        {
            // A fresh install must be able to pair its first phone without a shell. Not when the
            // bond file could not be read: its bonds exist, only unreadable, so this is no first start.
            openPairingWindow(for: configuration.firstStartPairingWindow, reason: "no central is bonded yet")
        }
    }

    /// The Security Manager with the stored bonds, and the store to persist them to. A bond file
    /// that cannot be read is reported and left untouched (no store): pairing still works, bonds
    /// then last until the service stops, and nothing already stored is overwritten.
    private static func loadSecurity(_ configuration: HostConfiguration, logger: Logger) -> (SecurityManager, BondStore?) {
        let store = BondStore(directory: configuration.stateDirectory)
        do {
            let bonds = try store.load()
            if !bonds.bonds.isEmpty { logger.info("\(bonds.bonds.count) bonded centrals in \(store.path)") }
            return (SecurityManager(configuration: configuration.security, bonds: bonds), store)
        } catch {
            logger.error("\(error); bonds are kept in memory only until the file is fixed or removed")
            return (SecurityManager(configuration: configuration.security), nil)
        }
    }

    /// Monotonic time for the Security Manager (its timeout and back-off).
    private var now: LoopInstant { EventLoop.now() }

    var bonds: BondRegistry { manager.bonds }

    // MARK: Connections

    /// A bonded central (by its identity address, or a resolvable private address its IRK
    /// resolves) is asked at once to encrypt with its key (Security Request), so its restored
    /// subscriptions deliver without it first touching a protected attribute. A central without a
    /// bond is not asked to pair: it pairs when an attribute answers that it must.
    func connectionOpened(_ connection: ConnectionState, local: BluetoothAddress) {
        let central = connection.central
        manager.connectionOpened(central.handle, peer: central.address, local: local)
        updateSecurity(of: connection)
        if let bond = manager.bond(on: central.handle) {
            logger.info("\(central) is bonded (\(bond.identity)); asking it to encrypt")
            perform(
                manager.requestSecurity(
                    on: central.handle,
                    authenticated: bond.longTermKey.authenticated,
                    now: now))
        }
    }

    func connectionClosed(_ handle: UInt16) {
        manager.connectionClosed(handle)
        awaitingConfirmation.remove(handle)
        scheduleTimer()
    }

    /// The controller is gone with every connection on it.
    func sessionEnded(closing handles: [UInt16]) {
        timer?.cancel()
        for handle in handles { manager.connectionClosed(handle) }
        scheduleTimer()  // The pairing window still closes on time.
    }

    // MARK: Inbound

    /// One SDU of the Security Manager channel.
    func received(_ payload: [UInt8], from connection: ConnectionState) {
        perform(manager.receive(payload, on: connection.central.handle, now: now))
    }

    /// HCI LE Long Term Key Request: the Reply with the key of the pairing under way or of the
    /// central's bond, else the Negative Reply (the controller then refuses encryption).
    func longTermKeyReply(to central: Central, rand: UInt64, ediv: UInt16) -> HCICommand {
        let handle = central.handle
        if let key = manager.longTermKeyRequest(on: handle, ediv: ediv, rand: rand) {
            return .leLongTermKeyRequestReply(handle: handle, littleEndianKey: key.key.littleEndianBytes)
        }
        logger.info("\(central) asked to encrypt with a key gattway does not have; refusing")
        return .leLongTermKeyRequestNegativeReply(handle: handle)
    }

    /// HCI Encryption Change or Encryption Key Refresh Complete.
    func encryptionChanged(of connection: ConnectionState, status: HCIStatus, enabled: Bool) {
        if status != .success {
            logger.info("\(connection.central): encryption failed: \(status)")
        }
        let actions = manager.encryptionChanged(
            on: connection.central.handle, enabled: status == .success && enabled, now: now)
        perform(actions)
        updateSecurity(of: connection)
    }

    /// After an ATT PDU from a bonded central on its bonded key: its CCCD values go to its bond
    /// (and the bond file) when they changed, so its subscriptions survive reconnection, and so
    /// do its Client Supported Features and the Database Hash once it confirmed Service Changed
    /// (`recordDatabaseHash`).
    func persistSubscriptions(of connection: ConnectionState) {
        let handle = connection.central.handle
        guard connection.security.isBonded, let bond = manager.bond(on: handle) else { return }
        var changed = recordDatabaseHash(of: connection.central, in: bond)
        let features = server.clientSupportedFeatures(of: connection.central)
        if features != bond.clientSupportedFeatures {
            changed = manager.setClientSupportedFeatures(features, on: handle) || changed
        }
        let current = server.clientConfigurations(of: connection.central)
        guard current != bond.clientConfigurations else {
            if changed { saveBonds() }
            return
        }
        for attribute in Set(current.keys).union(bond.clientConfigurations.keys).sorted() {
            changed =
                manager.setClientConfiguration(current[attribute] ?? 0, handle: attribute, on: handle)
                || changed
        }
        if changed { saveBonds() }
    }

    // MARK: The user

    /// See `PeripheralHost.confirmNumericComparison`.
    func confirmNumericComparison() {
        let waiting = awaitingConfirmation.sorted()
        awaitingConfirmation = []
        switch waiting.count {
        case 0:
            logger.info("a pairing confirmation was pressed, but no pairing waits for one")
        case 1:
            perform(manager.confirmNumericComparison(on: waiting[0], accepted: true, now: now))
        default:
            logger.warning("\(waiting.count) pairings wait for a confirmation at once; refusing them all")
            for handle in waiting {
                perform(manager.confirmNumericComparison(on: handle, accepted: false, now: now))
            }
        }
    }

    /// The pairing window now: open (until when, from now) or closed.
    var pairingWindow: (open: Bool, remaining: Duration?) {
        (manager.pairingWindow.isOpen(at: now), manager.pairingWindow.remaining(at: now))
    }

    /// Pairing Requests refused outside a pairing window since the start.
    var refusedPairings: Int { manager.refusedPairings }

    /// See `PeripheralHost.openPairingWindow`.
    func openPairingWindow(for length: Duration, reason: String) {
        guard configuration.security.pairing == .window else {
            logger.notice("pairing is open at all times (bluetooth.security.pairing: open); no window needed")
            return
        }
        manager.openPairingWindow(for: length, now: now)
        logger.notice("pairing window open for \(Self.format(length)) (\(reason)): new phones can pair now")
        eventSink(.pairingWindowChanged(open: true))
        scheduleTimer()
    }

    /// See `PeripheralHost.closePairingWindow`.
    func closePairingWindow() {
        guard manager.closePairingWindow() else { return }
        logger.notice("pairing window closed")
        eventSink(.pairingWindowChanged(open: false))
    }

    /// `2m`, `90s`: whole minutes as minutes, else seconds.
    static func format(_ length: Duration) -> String {
        let seconds = length.components.seconds
        return seconds % 60 == 0 && seconds > 0 ? "\(seconds / 60)m" : "\(seconds)s"
    }

    /// See `PeripheralHost.removeBond`; false when there was none. The bond file follows with
    /// `saveBonds(completion:)`.
    func removeBond(_ address: BluetoothAddress) -> Bool {
        guard manager.removeBond(address) else { return false }
        return true
    }

    /// See `PeripheralHost.removeAllBonds`; returns how many there were.
    func removeAllBonds() -> Int {
        let count = manager.bonds.bonds.count
        manager.removeAllBonds()
        return count
    }

    /// Hands the bonds as they are now to the state files' writer; `completion` gets nil or the
    /// error, on the writer's thread, once they are on disk (at once without a bond file).
    func saveBonds(completion: @escaping @Sendable (BondStore.Error?) -> Void) {
        guard let bondStore else { return completion(nil) }
        bondStore.save(manager.bonds, using: stateWriter, completion: completion)
    }

    // MARK: Actions

    /// Sends the Security Manager's PDUs and acts on its events, in order.
    private func perform(_ actions: [SecurityManager.Action]) {
        for action in actions {
            switch action {
            case .send(let handle, let pdu):
                transmitter.send(L2CAPFrame(channel: L2CAPChannel.securityManager, payload: pdu.encoded), on: handle)
            case .event(let event):
                report(event)
            }
        }
        scheduleTimer()
    }

    private func report(_ event: SecurityEvent) {
        switch event {
        case .displayPasskey(let handle, let peer, let passkey):
            guard let central = connections.central(on: handle) else { return }
            if configuration.security.fixedPasskey != nil {
                logger.notice("pairing with \(peer): enter the configured passkey on the device")
                eventSink(.passkeyDisplayed(central, passkey: nil))
            } else {
                logger.notice("\(event)")
                eventSink(.passkeyDisplayed(central, passkey: passkey))
            }
        case .passkeyRequested(let handle, let peer):
            // The central shows a passkey for the user to type on gattway, which has no keyboard
            // (a fixed passkey cannot match the central's random one).
            logger.warning(
                """
                pairing with \(peer) needs a passkey typed on gattway, which has no input; refusing \
                (use io_capabilities display_only, no_input_no_output, or display_yes_no with confirm_with)
                """)
            perform(manager.enterPasskey(nil, on: handle, now: now))
        case .numericComparison(let handle, let peer, let value):
            guard let central = connections.central(on: handle) else { return }
            guard configuration.confirmsNumericComparison else {
                // Accepting unseen would claim MITM protection nobody checked.
                logger.warning(
                    """
                    pairing with \(peer) asks to confirm a number, and nothing is configured to confirm \
                    it (bluetooth.security.confirm_with); refusing
                    """)
                perform(manager.confirmNumericComparison(on: handle, accepted: false, now: now))
                return
            }
            awaitingConfirmation.insert(handle)
            logger.notice("\(event)")
            eventSink(.numericComparison(central, number: value))
        case .pairingComplete(let handle, let outcome):
            awaitingConfirmation.remove(handle)
            logger.notice("\(event)")
            if outcome.bond != nil { saveBonds() }
            guard let connection = connections[handle] else { return }
            eventSink(.paired(connection.central, identity: outcome.identity, bonded: outcome.bond != nil))
            updateSecurity(of: connection)
        case .pairingFailed(let handle, _, let failure):
            awaitingConfirmation.remove(handle)
            logger.notice("\(event)")
            guard let central = connections.central(on: handle) else { return }
            eventSink(.pairingFailed(central, reason: failure.description))
        case .pairingRefused(let handle, _):
            logger.warning("\(event) [\(manager.refusedPairings) refused since the start]")
            guard let central = connections.central(on: handle) else { return }
            eventSink(.pairingRefused(central))
        case .pairingWindowClosed:
            logger.notice("\(event): new phones cannot pair until it is opened again")
            eventSink(.pairingWindowChanged(open: false))
        }
    }

    /// Tells the GATT server (and the program) what the link is protected by now, and brings back
    /// a bonded central's subscriptions once its link runs on the bond's key.
    private func updateSecurity(of connection: ConnectionState) {
        let central = connection.central
        let smp = manager.linkEncryption(on: central.handle)
        let security = BluetoothGATT.LinkSecurity(
            isEncrypted: smp != nil, isAuthenticated: smp?.authenticated ?? false,
            encryptionKeySize: Int(smp?.keySize ?? 0), isBonded: smp?.bonded ?? false,
            bondExists: manager.bond(on: central.handle) != nil)
        let before = connection.security
        guard security != before else { return }
        connection.security = security
        if security.isEncrypted != before.isEncrypted || security.isBonded != before.isBonded
            || security.isAuthenticated != before.isAuthenticated
        {
            logger.info("\(central): link \(Self.describe(security))")
        }
        server.securityChanged(security, for: central)
        if security.isBonded, !before.isBonded, let bond = manager.bond(on: central.handle) {
            restoreBond(bond, of: central)
        }
        // After the restore, so whoever sees the event finds the subscriptions in place.
        eventSink(.securityChanged(central, security))
    }

    /// A bonded link: the central's subscriptions come back, unless the database changed since
    /// it last saw it (a restart or a reload with another layout), when it is told so instead;
    /// its bond records the Database Hash once it knows the database (`recordDatabaseHash`).
    private func restoreBond(_ bond: Bond, of central: Central) {
        let hash = server.databaseHash()
        let changed = bond.databaseHash.map { $0 != hash } ?? false
        if changed {
            logger.info("\(central): the attribute database changed since it last saw it; indicating Service Changed")
            server.restoreSubscriptions(
                bond.clientConfigurations, clientSupportedFeatures: bond.clientSupportedFeatures, for: central,
                databaseChanged: true)
        } else if !bond.clientConfigurations.isEmpty || bond.clientSupportedFeatures != 0 {
            logger.info("\(central): restoring \(bond.clientConfigurations.count) subscriptions of its bond")
            server.restoreSubscriptions(
                bond.clientConfigurations, clientSupportedFeatures: bond.clientSupportedFeatures, for: central,
                databaseChanged: false)
        }
        if recordDatabaseHash(of: central, in: bond) { saveBonds() }
    }

    /// Records the Database Hash in the central's bond when it differs and the central has no
    /// Service Changed indication left to confirm; true when the bond changed. Until it confirms,
    /// the bond keeps the hash it had: a central that leaves before it learns of a change is told
    /// again when it comes back, rather than trusting handles cached from before.
    private func recordDatabaseHash(of central: Central, in bond: Bond) -> Bool {
        let hash = server.databaseHash()
        guard bond.databaseHash != hash, !(server.awaitsServiceChangedConfirmation(central)) else { return false }
        return manager.setDatabaseHash(hash, on: central.handle)
    }

    static func describe(_ security: BluetoothGATT.LinkSecurity) -> String {
        guard security.isEncrypted else { return "not encrypted" }
        return "encrypted (\(security.encryptionKeySize)-byte key, "
            + (security.isAuthenticated ? "authenticated" : "unauthenticated")
            + (security.isBonded ? ", bonded)" : ", not bonded)")
    }

    /// Hands the bonds to the state files' writer; a write that fails is logged (the bonds stay
    /// in memory, and the next change writes them all again).
    private func saveBonds() {
        guard let bondStore else { return }
        bondStore.save(manager.bonds, using: stateWriter) { [logger] error in
            if let error { logger.error("\(error)") }
        }
    }

    // MARK: The SMP timeout

    /// Schedules the timer for the Security Manager's earliest deadline (no polling). A wake-up
    /// before it (the deadline moved later since the arming) expires nothing and schedules again.
    private func scheduleTimer() {
        guard let deadline = manager.nextDeadline else { return }
        if timer == nil {
            // The timer fires on the loop, the executor of the host that owns this coordinator and
            // the only place it is used; the loop-bound reference checks that it does.
            let coordinator = LoopBound(WeakReference<SecurityCoordinator>())
            coordinator.value.target = self
            timer = DeadlineTimer { _ in coordinator.value.target?.deadlineReached() }
        }
        timer?.schedule(at: deadline)
    }

    private func deadlineReached() {
        perform(manager.expireTimers(now: now))
    }
}
