import BluetoothATT
import BluetoothCore
import EventLoop
import LoopClock

/// The GATT server: a pure, synchronous, deterministic state machine. ATT PDU bytes in for a
/// central, ATT PDU bytes out plus events; no I/O, no clock, no threads.
///
/// ## The seam the host drives
/// - `connect(_:security:)` when an LE connection opens (the `CentralID` is the host's name for
///   it, e.g. the HCI connection handle); `disconnect(_:)` when it closes.
/// - `receive(_:from:now:)` with every ATT PDU (the payload of L2CAP CID 0x0004).
/// - `setSecurity(_:for:)` whenever encryption or pairing changes the link's security.
/// - `addTransmitCredits(_:now:)`: how many more notification/indication PDUs the link can take
///   (the host's free controller buffers, given at start and whenever packets complete).
///   Responses do not consume credits: ATT allows one outstanding request per central, so they
///   are bounded by the central and the host must always accept them.
/// - `expireTransactions(now:)` at `nextTransactionDeadline`, from a timer (no polling): an
///   indication unconfirmed for 30 s ends the bearer (`transactionTimedOut`).
/// - `takeOutput()` after any call: the PDUs to transmit (`.send`) in order, and the events.
///
/// PDUs from a central that is not connected are dropped. Each request is answered before
/// `receive` returns, so a central never has more than one request outstanding here; a client that
/// pipelines requests anyway is answered in order, once each.
///
/// Time is an input (`now`), so the 30 s timeout is testable without sleeping. The program-facing
/// calls (`addService`, `removeService`, `updateValue`) live here too; `Peripheral` wraps them
/// for async code. A class, not a struct: it is one mutable state machine owned by one owner
/// (the `Peripheral` actor, a test, a benchmark), never copied and never shared across threads.
public final class GATTServer {
    public struct PreferredConnectionParameters: Hashable, Sendable {
        /// Connection interval bounds in 1.25 ms units, latency in events, timeout in 10 ms units.
        public var minimumInterval: UInt16
        public var maximumInterval: UInt16
        public var peripheralLatency: UInt16
        public var supervisionTimeout: UInt16

        public init(
            minimumInterval: UInt16, maximumInterval: UInt16, peripheralLatency: UInt16,
            supervisionTimeout: UInt16
        ) {
            self.minimumInterval = minimumInterval
            self.maximumInterval = maximumInterval
            self.peripheralLatency = peripheralLatency
            self.supervisionTimeout = supervisionTimeout
        }

        /// 30–50 ms interval, no latency, 4 s supervision timeout.
        public static let standard = Self(
            minimumInterval: 24, maximumInterval: 40, peripheralLatency: 0,
            supervisionTimeout: 400)
    }

    public struct Configuration: Hashable, Sendable {
        public var deviceName: String
        public var appearance: UInt16
        public var preferredConnectionParameters: PreferredConnectionParameters
        /// The server's Rx MTU offered in Exchange MTU (23...517).
        public var maximumMTU: UInt16
        /// Prepare Write requests a central may queue before Prepare Queue Full.
        public var preparedWriteQueueLimit: Int
        /// Indications `updateValue` may queue per central behind the outstanding one.
        public var indicationQueueLimit: Int
        /// Updates (notifications, indications) one central may have sent and not yet delivered
        /// (`updatesDelivered`). The transmit credits are shared by all centrals: this keeps a
        /// central whose link stalls from holding all of them and stopping the others.
        public var perCentralUpdateLimit: Int
        /// Smallest key size (bytes) accepted for attributes that require encryption.
        public var minimumEncryptionKeySize: Int
        /// The ATT transaction timeout (Vol 3 Part F 3.3.3).
        public var transactionTimeout: Duration

        public init(
            deviceName: String = "gattway", appearance: UInt16 = 0,
            preferredConnectionParameters: PreferredConnectionParameters = .standard,
            maximumMTU: UInt16 = ATTPDU.maximumMTU, preparedWriteQueueLimit: Int = 64,
            indicationQueueLimit: Int = 8, perCentralUpdateLimit: Int = 4,
            minimumEncryptionKeySize: Int = 16, transactionTimeout: Duration = .seconds(30)
        ) {
            self.deviceName = deviceName
            self.appearance = appearance
            self.preferredConnectionParameters = preferredConnectionParameters
            self.maximumMTU = min(max(maximumMTU, ATTPDU.defaultMTU), ATTPDU.maximumMTU)
            self.preparedWriteQueueLimit = preparedWriteQueueLimit
            self.indicationQueueLimit = indicationQueueLimit
            self.perCentralUpdateLimit = max(perCentralUpdateLimit, 1)
            self.minimumEncryptionKeySize = minimumEncryptionKeySize
            self.transactionTimeout = transactionTimeout
        }
    }

    public let configuration: Configuration
    public var handlers: GATTRequestHandlers
    /// The PDU being handled had a batch applied by `handlers.write` (`GATTServerEvent.writesApplied`).
    var appliedWrites = false
    var database = AttributeDatabase()
    /// The connected centrals in id order. A list searched by id, not a table keyed by it: a link
    /// serves a handful of centrals, and every update, credit and delivery looked one up, each
    /// time hashing its id.
    private(set) var centrals: [CentralState] = []
    /// How many more notification/indication PDUs the link accepts now.
    public private(set) var transmitCredits = 0
    /// `updateValue` returned false and no ready event has been delivered since.
    var readyToUpdatePending = false
    /// `updateValue`'s update per central, in `centrals`' order: `notifyBit`, `indicateBit` or 0
    /// (none). Kept so that a value allocates no list, and plain bits, which a list empties
    /// without destroying elements one by one (as a list of centrals did, twice per value).
    private var updateBits: [UInt16] = []
    var output: [GATTServerOutput] = []
    /// The GATT service's Service Changed characteristic.
    let serviceChanged: PublishedCharacteristic
    /// Between `holdServiceChanged()` and `releaseServiceChanged(now:)`: the handles changed so
    /// far (nil: none yet), indicated as one change at the release.
    private var heldChange: ClosedRange<UInt16>?
    private var holdsServiceChanged = false

    public init(configuration: Configuration = Configuration(), handlers: GATTRequestHandlers = .unavailable) {
        self.configuration = configuration
        self.handlers = handlers
        var database = AttributeDatabase()
        do {
            _ = try database.add(Self.genericAccessService(configuration), isSystem: true)
            let gatt = try database.add(Self.genericAttributeService, isSystem: true)
            serviceChanged = gatt.characteristics[0]
            self.database = database
        } catch {
            preconditionFailure("the GAP and GATT services always fit an empty database: \(error)")
        }
    }

    // MARK: Program-facing

    /// The services published, in handle order (GAP and GATT first).
    public var services: [PublishedService] { database.publishedServices }

    /// Publishes a service on the first free run of handles and indicates Service Changed.
    @discardableResult
    public func addService(_ service: GATTService, now: LoopInstant) throws(GATTDatabaseError) -> PublishedService {
        let published = try database.add(service)
        databaseChanged(published.handles, now: now)
        return published
    }

    /// Removes a program service and indicates Service Changed over the handles it freed.
    @discardableResult
    public func removeService(_ id: GATTServiceID, now: LoopInstant) throws(GATTDatabaseError) -> PublishedService {
        let removed = try database.remove(id)
        forgetSubscriptions(to: removed)
        databaseChanged(removed.handles, now: now)
        return removed
    }

    /// Removes every program service (never GAP/GATT) with one Service Changed indication, and
    /// returns them in handle order.
    @discardableResult
    public func removeAllServices(now: LoopInstant) -> [PublishedService] {
        let removable = database.services.values.filter { !$0.isSystem }.map(\.published)
            .sorted { $0.handles.lowerBound < $1.handles.lowerBound }
        guard let low = removable.first?.handles.lowerBound,
            let high = removable.map(\.handles.upperBound).max()
        else { return [] }
        for service in removable {
            _ = try? database.remove(service.id)
            forgetSubscriptions(to: service)
        }
        databaseChanged(low...high, now: now)
        return removable
    }

    /// Holds Service Changed back while several services change (a reload's removals and
    /// additions): `releaseServiceChanged(now:)` then tells each central once, over every handle
    /// changed in between, instead of once per service with the database half changed.
    public func holdServiceChanged() {
        holdsServiceChanged = true
    }

    /// Ends `holdServiceChanged()`: one Service Changed over the handles changed since, if any.
    public func releaseServiceChanged(now: LoopInstant) {
        holdsServiceChanged = false
        guard let range = heldChange else { return }
        heldChange = nil
        databaseChanged(range, now: now)
    }

    /// The Database Hash as the characteristic carries it (least significant byte first).
    public var databaseHash: [UInt8] { database.databaseHash() }

    /// Sends `value` to the subscribed centrals among `centrals` (nil: all subscribed), as a
    /// notification or indication per each central's CCCD, truncated to its MTU − 3.
    ///
    /// Returns false, sending nothing, when the link lacks credits for every notification, a
    /// central to notify may take no more credits (`mayTakeCredit`: its share is used and the
    /// rest is reserved for the other centrals, or it has `perCentralUpdateLimit` undelivered), or
    /// a central's indication queue is full; one `readyToUpdateSubscribers` event follows when room frees.
    ///
    /// `now` is asked only when an indication goes out (its deadline): a caller reading a clock
    /// reads it for none of the notifications (here and in `updatesDelivered` and
    /// `addTransmitCredits`, which the host calls for every packet sent).
    public func updateValue(
        _ value: [UInt8], for characteristic: PublishedCharacteristic,
        to targets: [CentralID]? = nil,
        now: @autoclosure () -> LoopInstant
    ) throws(GATTServerError) -> Bool {
        try updateValue(value, for: characteristic, among: targets, now: now())
    }

    /// What `updateValue(_:for:toCentral:now:)` did with a value.
    public enum CentralUpdate: Equatable, Sendable {
        /// A notification, which took a transmit credit: the caller sends it, as the output's
        /// `sendUpdate` (it is not in the output).
        case notification(ATTUpdate)
        /// Done: what the value called for is in the output (an indication), or the central is
        /// not subscribed to the characteristic.
        case handled
        /// No room: nothing was sent, and one `readyToUpdateSubscribers` follows when room frees.
        case refused
    }

    /// `updateValue(_:for:to:now:)` for one central, with no list made for it: a notify driver
    /// sends each central its own updates, one call per notification.
    ///
    /// A notification, the usual update, is judged for its one central directly and handed back
    /// rather than put in the output, which the caller would take out again at once: the general
    /// path's first pass (every central's bits noted before any update goes out, so that all are
    /// refused when one cannot take its own) and the output's round trip cost about 250
    /// instructions per notification. An indication takes the general path.
    public func updateValue(
        _ value: [UInt8], for characteristic: PublishedCharacteristic, toCentral target: CentralID,
        now: @autoclosure () -> LoopInstant
    ) throws(GATTServerError) -> CentralUpdate {
        let cccdHandle = try clientConfigurationHandle(of: characteristic)
        guard let index = centrals.firstIndex(where: { $0.id == target }),
            enabledUpdateBits(of: centrals[index], cccd: cccdHandle) == Self.notifyBit
        else {
            return try updateValue(value, for: characteristic, among: CollectionOfOne(target), now: now())
                ? .handled : .refused
        }
        guard mayTakeCredit(centrals[index]) else {
            readyToUpdatePending = true
            return .refused
        }
        return .notification(notification(of: value, for: characteristic, toCentralAt: index))
    }

    private func updateValue<Targets: Collection<CentralID>>(
        _ value: [UInt8], for characteristic: PublishedCharacteristic, among targets: Targets?,
        now: @autoclosure () -> LoopInstant
    ) throws(GATTServerError) -> Bool {
        let cccdHandle = try clientConfigurationHandle(of: characteristic)
        // The targets (one central, or a few: a link serves at most a handful) are searched
        // directly rather than made a set: this runs for every value.
        updateBits.removeAllKeepingStorage()
        var notificationCount = 0
        var indicationsSentNow = 0
        // By index, here and below: iterating the property retains the array, for every value.
        for index in centrals.indices {
            let central = centrals[index]
            let bits = targets?.contains(central.id) ?? true ? enabledUpdateBits(of: central, cccd: cccdHandle) : 0
            updateBits.append(bits)
            if bits == Self.notifyBit {
                guard mayTakeCredit(central) else {
                    readyToUpdatePending = true
                    return false
                }
                notificationCount += 1
            } else if bits == Self.indicateBit {
                guard central.indicationQueue.count < configuration.indicationQueueLimit else {
                    readyToUpdatePending = true
                    return false
                }
                if central.outstandingIndication == nil && central.indicationQueue.isEmpty { indicationsSentNow += 1 }
            }
        }
        guard notificationCount + indicationsSentNow <= transmitCredits else {
            readyToUpdatePending = true
            return false
        }
        // By index rather than zipped: a zip retains both arrays, for every value.
        for index in updateBits.indices where updateBits[index] == Self.notifyBit {
            sendUpdate(notification(of: value, for: characteristic, toCentralAt: index), to: centrals[index].id)
        }
        for index in updateBits.indices where updateBits[index] == Self.indicateBit {
            let central = centrals[index]
            central.indicationQueue.append(
                QueuedIndication(
                    handle: characteristic.valueHandle, value: value,
                    isServiceChanged: false))
            pumpIndications(central, now: now())
        }
        return true
    }

    /// The handle of the characteristic's CCCD, once it is known to be published and to notify or
    /// indicate.
    private func clientConfigurationHandle(of characteristic: PublishedCharacteristic) throws(GATTServerError) -> UInt16 {
        guard database.publishes(characteristic) else {
            throw .characteristicNotPublished(characteristic.uuid)
        }
        guard let cccdHandle = characteristic.clientConfigurationHandle else {
            throw .characteristicCannotNotify(characteristic.uuid)
        }
        return cccdHandle
    }

    /// What `central` takes of the characteristic whose CCCD is `cccdHandle`: `notifyBit`
    /// (notifications, when it enabled both), `indicateBit`, or 0 (not subscribed, or closing).
    private func enabledUpdateBits(of central: CentralState, cccd cccdHandle: UInt16) -> UInt16 {
        guard !central.isClosed, let configured = central.clientConfigurations[cccdHandle] else { return 0 }
        return configured & Self.notifyBit != 0 ? Self.notifyBit : configured & Self.indicateBit
    }

    /// The notification of `value` to the central at `index` in `centrals`, which may take its
    /// credit: takes it.
    private func notification(
        of value: [UInt8], for characteristic: PublishedCharacteristic, toCentralAt index: Int
    ) -> ATTUpdate {
        transmitCredits -= 1
        // Reached through the array, not bound to a local: a local central was retained
        // across the calls, and released after, for every notification.
        centrals[index].updatesInFlight += 1
        return ATTUpdate(
            .notification, handle: characteristic.valueHandle,
            value: value.truncated(to: centrals[index].maximumUpdateValueLength))
    }

    /// Client Characteristic Configuration bits (Vol 3 Part G 3.3.3.3).
    private static let notifyBit: UInt16 = 0x0001
    private static let indicateBit: UInt16 = 0x0002

    // MARK: Host-facing

    public func connect(_ id: CentralID, security: LinkSecurity = .unencrypted) {
        guard central(id) == nil else { return }
        centrals.insert(CentralState(id: id, security: security), at: centrals.firstIndex { $0.id > id } ?? centrals.endIndex)
    }

    /// Forgets the central: its prepared writes and queued indications are discarded and every
    /// subscription ends with an `unsubscribed` event (in handle order).
    public func disconnect(_ id: CentralID) {
        guard let index = centrals.firstIndex(where: { $0.id == id }) else { return }
        let central = centrals.remove(at: index)
        for handle in central.clientConfigurations.handles {
            if let attribute = database.attribute(at: handle), case .clientConfiguration(let characteristic) = attribute.value {
                emit(.unsubscribed(id, characteristic))
            }
        }
    }

    public func setSecurity(_ security: LinkSecurity, for id: CentralID) {
        central(id)?.security = security
    }

    /// Brings back a bonded central's subscriptions (CCCD handle → bits) as it left them on an
    /// earlier connection (Vol 3 Part G 3.3.3.3: CCCD values persist across connections for
    /// bonded devices). Each CCCD that becomes non-zero emits `subscribed`. A handle that is no
    /// longer a CCCD (the database changed) or bits the characteristic does not offer are
    /// skipped; the host calls this once the link is encrypted with the bond's key.
    ///
    /// `databaseChanged`: the database is not the one the central last saw (its bond recorded
    /// another Database Hash; gattway restarted with another layout). Its other CCCD handles may
    /// now belong to other characteristics, so only its Service Changed subscription comes back
    /// (the GATT service's handles never move), and it gets a Service Changed indication over
    /// every handle (Vol 3 Part G 2.5.2: a bonded client is told of changes made while it was
    /// disconnected), after which it discovers again and subscribes anew.
    ///
    /// `clientSupportedFeatures`: what the bonded central wrote on an earlier connection (Vol 3
    /// Part G 7.2: persistent for bonded clients); with robust caching among them it is
    /// change-unaware after a database change (2.5.2.1) until it catches up.
    public func restoreClientConfigurations(
        _ configurations: [UInt16: UInt16], clientSupportedFeatures: UInt8 = 0, for id: CentralID,
        databaseChanged: Bool = false, now: LoopInstant
    ) {
        guard let central = central(id), !central.isClosed else { return }
        // Bits once set stay set (7.2), so a restore only adds.
        central.clientSupportedFeatures |= clientSupportedFeatures & ClientFeatures.all
        if databaseChanged {
            let serviceChangedCCCD = serviceChanged.clientConfigurationHandle
            let kept = configurations.filter { $0.key == serviceChangedCCCD }
            restoreClientConfigurations(kept, for: id, now: now)
            tellDatabaseChanged(0x0001...0xFFFF, to: central, now: now)
            return
        }
        for handle in configurations.keys.sorted() {
            let bits = configurations[handle]!
            guard bits != 0, let attribute = database.attribute(at: handle),
                case .clientConfiguration(let characteristic) = attribute.value
            else { continue }
            var allowed: UInt16 = 0
            if characteristic.properties.contains(.notify) { allowed |= 0x0001 }
            if characteristic.properties.contains(.indicate) { allowed |= 0x0002 }
            guard bits & ~allowed == 0 else { continue }
            let old = central.clientConfigurations[handle, default: 0]
            central.clientConfigurations[handle] = bits
            if old == 0 { emit(.subscribed(id, characteristic)) }
        }
    }

    public func snapshot(of id: CentralID) -> CentralSnapshot? {
        central(id)?.snapshot
    }

    public var connectedCentrals: [CentralID] { centrals.map(\.id) }

    /// The Client Supported Features the central wrote (0 when none, or not connected), for the
    /// host to keep with a bond.
    public func clientSupportedFeatures(of id: CentralID) -> UInt8 {
        central(id)?.clientSupportedFeatures ?? 0
    }

    /// Whether the central has a Service Changed indication still to confirm (queued or sent):
    /// until it confirms, it has not learnt of the database's last change.
    public func awaitsServiceChangedConfirmation(_ id: CentralID) -> Bool {
        guard let central = central(id) else { return false }
        return central.outstandingIndication?.isServiceChanged == true
            || central.indicationQueue.contains { $0.isServiceChanged }
    }

    /// The link can take `count` more notification/indication PDUs.
    public func addTransmitCredits(_ count: Int, now: @autoclosure () -> LoopInstant) {
        transmitCredits += max(count, 0)
        // By index: iterating the property retains the array, for every packet completed.
        for index in centrals.indices { pumpIndications(centrals[index], now: now()) }
        roomFreed()
    }

    /// `count` updates sent to the central have left the controller: they no longer count
    /// against it, and their credits come back (`addTransmitCredits` in the same step).
    public func updatesDelivered(_ count: Int, to id: CentralID, now: @autoclosure () -> LoopInstant) {
        if let central = central(id) { central.updatesInFlight = max(central.updatesInFlight - max(count, 0), 0) }
        addTransmitCredits(count, now: now())
    }

    /// The earliest instant an outstanding indication times out, for the host's timer.
    public var nextTransactionDeadline: LoopInstant? {
        // A loop, not a list of deadlines made and searched: the host asks after every packet
        // the controller completes.
        var earliest: LoopInstant?
        for central in centrals {
            guard let deadline = central.outstandingIndication?.deadline else { continue }
            if earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    /// Ends the bearer of every central whose indication went unconfirmed past its deadline.
    public func expireTransactions(now: LoopInstant) {
        for central in centrals { expireTransaction(of: central, now: now) }
    }

    /// Whether anything was produced since the last `takeOutput`.
    public var hasOutput: Bool { !output.isEmpty }

    /// Everything produced since the last call, in order.
    public func takeOutput() -> [GATTServerOutput] {
        var taken: [GATTServerOutput] = []
        takeOutput(into: &taken)
        return taken
    }

    /// `takeOutput()` for the event path: `buffer`, emptied by the caller, is exchanged with what
    /// was produced, so the two buffers take turns and neither is copied or allocated anew.
    public func takeOutput(into buffer: inout [GATTServerOutput]) {
        buffer.removeAllKeepingStorage()
        swap(&buffer, &output)
    }

    // MARK: Internals shared by the request handlers

    /// The connected central `id`, if any.
    func central(_ id: CentralID) -> CentralState? {
        centrals.first { $0.id == id }
    }

    func emit(_ event: GATTServerEvent) { output.append(.event(event)) }

    func send(_ pdu: ATTPDU, to central: CentralState) {
        output.append(.send(pdu.encoded, to: central.id))
    }

    /// A notification or indication, which took a transmit credit.
    func sendUpdate(_ update: ATTUpdate, to central: CentralID) {
        output.append(.sendUpdate(update, to: central))
    }

    func expireTransaction(of central: CentralState, now: LoopInstant) {
        guard !central.isClosed, let outstanding = central.outstandingIndication, outstanding.deadline <= now else { return }
        central.isClosed = true
        central.outstandingIndication = nil
        central.indicationQueue.removeAll()
        central.preparedWrites.removeAll()
        emit(.transactionTimedOut(central.id))
        roomFreed()
    }

    /// Whether `central` may take one more transmit credit now. The credits are reserved: every
    /// open central is guaranteed its share of the link (the credits split evenly, at most
    /// `perCentralUpdateLimit`), and one beyond its share may only borrow credits that no other
    /// central's unused share needs. Centrals whose links stall, however many, hold at most their
    /// shares, and the others keep theirs.
    func mayTakeCredit(_ central: CentralState) -> Bool {
        guard transmitCredits > 0, central.updatesInFlight < configuration.perCentralUpdateLimit else { return false }
        // Two passes over the centrals rather than a filtered copy: this runs for every update.
        var openCount = 0
        var capacity = transmitCredits
        for index in centrals.indices where !centrals[index].isClosed {
            openCount += 1
            capacity += centrals[index].updatesInFlight
        }
        let share = min(max(capacity / max(openCount, 1), 1), configuration.perCentralUpdateLimit)
        if central.updatesInFlight < share { return true }
        var reservedForOthers = 0
        for index in centrals.indices where !centrals[index].isClosed && centrals[index] !== central {
            reservedForOthers += max(0, share - centrals[index].updatesInFlight)
        }
        return transmitCredits > reservedForOthers
    }

    /// Sends the central's next queued indication if none is outstanding and the link has room.
    func pumpIndications(_ central: CentralState, now: @autoclosure () -> LoopInstant) {
        // The queue first: usually empty, and `mayTakeCredit` walks every central.
        guard !central.isClosed, central.outstandingIndication == nil, !central.indicationQueue.isEmpty,
            mayTakeCredit(central)
        else { return }
        // `remove(at:)`, not `removeFirst()`: that removes a range, destroying it generically.
        let next = central.indicationQueue.remove(at: 0)
        transmitCredits -= 1
        central.updatesInFlight += 1
        central.outstandingIndication = OutstandingIndication(
            handle: next.handle, isServiceChanged: next.isServiceChanged,
            deadline: now() + configuration.transactionTimeout)
        sendUpdate(
            ATTUpdate(.indication, handle: next.handle, value: next.value.truncated(to: central.maximumUpdateValueLength)),
            to: central.id)
    }

    /// Delivers the one ready event an earlier refused `updateValue` is owed, once there is room.
    func roomFreed() {
        guard readyToUpdatePending, transmitCredits > 0 else { return }
        readyToUpdatePending = false
        emit(.readyToUpdateSubscribers)
    }

    /// A removed service's subscriptions end (with events), so its handles can be reused by a
    /// later service without inheriting them; writes prepared to it stay queued, marked, so that
    /// Execute Write fails rather than answer success for values it never wrote.
    private func forgetSubscriptions(to service: PublishedService) {
        for central in centrals {
            for characteristic in service.characteristics {
                guard let handle = characteristic.clientConfigurationHandle,
                    central.clientConfigurations.removeValue(forKey: handle) != nil
                else { continue }
                emit(.unsubscribed(central.id, characteristic))
            }
            central.indicationQueue.removeAll { !$0.isServiceChanged && service.handles.contains($0.handle) }
            for index in central.preparedWrites.indices where service.handles.contains(central.preparedWrites[index].handle) {
                central.preparedWrites[index].attributeRemoved = true
            }
        }
    }

    /// Tells centrals about a change of the handles in `range` (Vol 3 Part G 7.1): a Service
    /// Changed indication to those that enabled it, and change-unawareness to those that enabled
    /// robust caching (Vol 3 Part G 2.5.2.1).
    private func databaseChanged(_ range: ClosedRange<UInt16>, now: LoopInstant) {
        if holdsServiceChanged {
            heldChange = heldChange.map { min($0.lowerBound, range.lowerBound)...max($0.upperBound, range.upperBound) } ?? range
            return
        }
        for central in centrals {
            tellDatabaseChanged(range, to: central, now: now)
        }
    }

    private func tellDatabaseChanged(_ range: ClosedRange<UInt16>, to central: CentralState, now: LoopInstant) {
        guard !central.isClosed else { return }
        if central.clientSupportedFeatures & ClientFeatures.robustCaching != 0 {
            central.isChangeAware = false
            central.sentOutOfSync = false
        }
        guard let cccd = serviceChanged.clientConfigurationHandle,
            central.clientConfigurations[cccd, default: 0] & 0x0002 != 0
        else { return }
        var value = ByteWriter(capacity: 4)
        value.write(range.lowerBound)
        value.write(range.upperBound)
        central.indicationQueue.append(
            QueuedIndication(handle: serviceChanged.valueHandle, value: value.bytes, isServiceChanged: true))
        pumpIndications(central, now: now)
    }

    // MARK: The built-in services

    private static func genericAccessService(_ configuration: Configuration) -> GATTService {
        var appearance = ByteWriter(capacity: 2)
        appearance.write(configuration.appearance)
        var parameters = ByteWriter(capacity: 8)
        let preferred = configuration.preferredConnectionParameters
        parameters.write(preferred.minimumInterval)
        parameters.write(preferred.maximumInterval)
        parameters.write(preferred.peripheralLatency)
        parameters.write(preferred.supervisionTimeout)
        let name = Array(configuration.deviceName.utf8.prefix(AttributeDatabase.maximumValueLength))
        return GATTService(
            uuid: .genericAccessService,
            characteristics: [
                GATTCharacteristic(uuid: .deviceName, properties: .read, permissions: .readable, value: .fixed(name)),
                GATTCharacteristic(
                    uuid: .appearance, properties: .read, permissions: .readable,
                    value: .fixed(appearance.bytes)),
                GATTCharacteristic(
                    uuid: .peripheralPreferredConnectionParameters, properties: .read,
                    permissions: .readable, value: .fixed(parameters.bytes))
            ])
    }

    private static let genericAttributeService = GATTService(
        uuid: .genericAttributeService,
        characteristics: [
            GATTCharacteristic(uuid: .serviceChanged, properties: .indicate, permissions: [], value: .fixed([])),
            GATTCharacteristic(
                uuid: .clientSupportedFeatures, properties: [.read, .write],
                permissions: [.readable, .writeable], value: .dynamic),
            GATTCharacteristic(uuid: .databaseHash, properties: .read, permissions: .readable, value: .dynamic)
        ])
}

extension Array where Element == UInt8 {
    /// At most `length` bytes of the value, the value itself (no copy) when it fits.
    func truncated(to length: Int) -> [UInt8] {
        count <= length ? self : Array(prefix(Swift.max(length, 0)))
    }
}

/// Client Supported Features bits (Vol 3 Part G 7.2).
enum ClientFeatures {
    static let robustCaching: UInt8 = 0x01
    /// Robust caching, EATT and Multiple Handle Value Notifications: the bits a client may set.
    static let all: UInt8 = 0x07
}

struct QueuedIndication {
    let handle: UInt16
    let value: [UInt8]
    let isServiceChanged: Bool
}

struct OutstandingIndication {
    let handle: UInt16
    let isServiceChanged: Bool
    let deadline: LoopInstant
}

struct PreparedWrite {
    let handle: UInt16
    let offset: Int
    let value: [UInt8]
    /// The attribute was removed (a database change) after this write was prepared.
    var attributeRemoved = false
}

/// A central's client characteristic configurations: CCCD handle → bits. A list in handle order,
/// not a dictionary: a central configures a handful, and every update looks its characteristic's
/// up, where hashing the handle cost about 150 instructions per notification
/// (docs/performance.md).
struct ClientConfigurations {
    private var entries: [(handle: UInt16, bits: UInt16)] = []

    /// The bits configured at `handle`; nil removes them.
    subscript(handle: UInt16) -> UInt16? {
        get {
            for entry in entries where entry.handle == handle { return entry.bits }
            return nil
        }
        set {
            let index = entries.firstIndex { $0.handle >= handle } ?? entries.endIndex
            let present = index < entries.endIndex && entries[index].handle == handle
            switch (newValue, present) {
            case (let bits?, true): entries[index].bits = bits
            case (let bits?, false): entries.insert((handle, bits), at: index)
            case (nil, true): entries.remove(at: index)
            case (nil, false): break
            }
        }
    }

    subscript(handle: UInt16, default value: UInt16) -> UInt16 {
        self[handle] ?? value
    }

    /// The configured handles, ascending.
    var handles: [UInt16] { entries.map(\.handle) }

    /// Removes the bits at `handle`, returning them.
    mutating func removeValue(forKey handle: UInt16) -> UInt16? {
        defer { self[handle] = nil }
        return self[handle]
    }

    var dictionary: [UInt16: UInt16] {
        Dictionary(uniqueKeysWithValues: entries.map { ($0.handle, $0.bits) })
    }
}

/// One central's ATT bearer state. A class so the request handlers mutate it in place.
final class CentralState {
    let id: CentralID
    var mtu = ATTPDU.defaultMTU
    var security: LinkSecurity
    /// CCCD handle → configuration bits; zero values are removed.
    var clientConfigurations = ClientConfigurations()
    var clientSupportedFeatures: UInt8 = 0
    var preparedWrites: [PreparedWrite] = []
    var outstandingIndication: OutstandingIndication?
    var indicationQueue: [QueuedIndication] = []
    /// Updates sent and not yet reported delivered by the host.
    var updatesInFlight = 0
    /// Robust caching (Vol 3 Part G 2.5.2.1): false after a database change until the client
    /// catches up.
    var isChangeAware = true
    var sentOutOfSync = false
    /// The transaction timed out: nothing more is sent or accepted on this bearer.
    var isClosed = false

    init(id: CentralID, security: LinkSecurity) {
        self.id = id
        self.security = security
    }

    var maximumUpdateValueLength: Int { Int(mtu) - 3 }

    var snapshot: CentralSnapshot {
        CentralSnapshot(
            mtu: mtu, security: security, clientConfigurations: clientConfigurations.dictionary,
            clientSupportedFeatures: clientSupportedFeatures,
            preparedWriteCount: preparedWrites.count,
            outstandingIndicationHandle: outstandingIndication?.handle,
            queuedIndicationCount: indicationQueue.count, isChangeAware: isChangeAware,
            isClosed: isClosed)
    }
}
