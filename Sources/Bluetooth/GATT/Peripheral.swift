import BluetoothATT
import BluetoothCore
import EventLoop
import LoopClock

/// The peripheral's state (CoreBluetooth's peripheral-manager states). Commands are valid only
/// in `poweredOn`.
public enum PeripheralState: String, Hashable, Sendable {
    case unknown, resetting, unsupported, unauthorized, poweredOff, poweredOn
}

/// A connection-latency wish for one central: low (fast exchange) to high (battery). The host
/// turns it into a connection parameter request; the central decides.
public enum ConnectionLatency: Hashable, Sendable {
    case low, medium, high
}

public enum PeripheralError: Error, Hashable, Sendable, CustomStringConvertible {
    case notPoweredOn(PeripheralState)
    case database(GATTDatabaseError)
    case server(GATTServerError)

    public var description: String {
        switch self {
        case .notPoweredOn(let state): "the peripheral is \(state.rawValue), not poweredOn"
        case .database(let error): error.description
        case .server(let error): error.description
        }
    }
}

/// Where the peripheral's events go (`Peripheral.setEventSink`): called on the event loop, in
/// order, in the call that produced them, once that call's PDUs are handed to the link, so the
/// program may call the peripheral again from it (what it sends then follows them). Nothing
/// queues between calls: an event with no sink set is dropped.
public typealias PeripheralEventSink = @Sendable (PeripheralEvent) -> Void

/// Everything the program hears from the peripheral, in order.
public enum PeripheralEvent: Hashable, Sendable {
    case stateChanged(PeripheralState)
    case serviceAdded(Result<PublishedService, PeripheralError>)
    case serviceRemoved(Result<PublishedService, PeripheralError>)
    case centralConnected(CentralID)
    case centralDisconnected(CentralID)
    case subscribed(CentralID, PublishedCharacteristic)
    case unsubscribed(CentralID, PublishedCharacteristic)
    case readyToUpdateSubscribers
    case maximumUpdateValueLengthChanged(CentralID, Int)
    /// The link's security changed (encryption started, pairing finished, a bond was stored).
    case securityChanged(CentralID, LinkSecurity)
    /// The central's Write Command (write without response) could not be applied, for this
    /// reason; no answer went back to it.
    case writeCommandRefused(CentralID, handle: UInt16, ATTErrorCode)
}

/// What the peripheral needs from the BLE host: the outbound half of the seam. Calls are made
/// from the `Peripheral` actor and must not block (enqueue and return).
public protocol PeripheralLink: Sendable {
    /// Transmit one ATT PDU on the central's ATT fixed channel (L2CAP CID 0x0004).
    func send(_ pdu: [UInt8], to central: CentralID)
    /// Transmit a notification or indication, which spent one of the server's transmit credits:
    /// the host reports it back with `updatesDelivered` and `transmitRoomFreed`.
    func sendUpdate(_ update: ATTUpdate, to central: CentralID)
    /// The ATT bearer is dead (an indication went unconfirmed for 30 s): disconnect the central.
    func disconnectAfterTransactionTimeout(_ central: CentralID)
    /// The program's latency wish for a central, to turn into a connection parameter request.
    func requestConnectionLatency(_ latency: ConnectionLatency, for central: CentralID)
}

/// The program-facing peripheral (issue 3 item 5), usable from async Swift.
///
/// An actor because two parties drive it concurrently — the program (publishing services,
/// updating values) and the host (delivering PDUs, link state) — and the `GATTServer` state
/// machine inside must see their calls one at a time. Every call runs the server synchronously
/// and then hands its output on: PDUs to `PeripheralLink`, events to the program's sink.
///
/// Host seam (inbound): `updateState(_:)`, `centralConnected(_:security:)`,
/// `centralDisconnected(_:)`, `securityChanged(_:for:)`, `restoreSubscriptions(_:for:)`,
/// `clientConfigurations(of:)`, `receive(_:from:)`,
/// `transmitRoomFreed(_:)`, and `expireTransactions()` at `nextTransactionDeadline`.
/// Time comes from the injected `now` function, so tests drive a manual clock.
public actor Peripheral {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public private(set) var state: PeripheralState = .unknown
    /// The program's (`setEventSink`).
    private var eventSink: PeripheralEventSink?
    /// The events of the call under way, handed to the sink once its PDUs are out
    /// (`deliverEvents`); a call the sink makes back adds its own after them. Emptied in place.
    private var pendingEvents: [PeripheralEvent] = []
    private var deliveringEvents = false
    private let server: GATTServer
    private let link: any PeripheralLink
    private let now: @Sendable () -> LoopInstant
    /// The server's output being sent; exchanged with the server's own buffer at each flush.
    private var output: [GATTServerOutput] = []

    public init(
        configuration: GATTServer.Configuration = .init(), link: any PeripheralLink,
        now: @escaping @Sendable () -> LoopInstant = { EventLoop.now() }
    ) {
        server = GATTServer(configuration: configuration)
        self.link = link
        self.now = now
    }

    // MARK: Program-facing

    /// From now on every event goes to `sink`; nil stops them. Set it before the host runs: an
    /// event while none is set is dropped, not kept for later.
    public func setEventSink(_ sink: PeripheralEventSink?) {
        eventSink = sink
    }

    /// Serves dynamic values: reads and write batches go to these synchronous handlers.
    public func setRequestHandlers(_ handlers: GATTRequestHandlers) {
        server.handlers = handlers
    }

    /// Publishes a service; `serviceAdded` reports the result as well.
    @discardableResult
    public func add(_ service: GATTService) throws(PeripheralError) -> PublishedService {
        let result: Result<PublishedService, PeripheralError>
        if state != .poweredOn {
            result = .failure(.notPoweredOn(state))
        } else {
            do throws(GATTDatabaseError) { result = .success(try server.addService(service, now: now())) } catch {
                result = .failure(.database(error))
            }
        }
        flush()
        emit(.serviceAdded(result))
        return try result.get()
    }

    /// Removes one service this program added; `serviceRemoved` reports the result as well.
    @discardableResult
    public func remove(_ id: GATTServiceID) throws(PeripheralError) -> PublishedService {
        let result: Result<PublishedService, PeripheralError>
        if state != .poweredOn {
            result = .failure(.notPoweredOn(state))
        } else {
            do throws(GATTDatabaseError) { result = .success(try server.removeService(id, now: now())) } catch {
                result = .failure(.database(error))
            }
        }
        flush()
        emit(.serviceRemoved(result))
        return try result.get()
    }

    /// Removes every service this program added (one `serviceRemoved` each).
    public func removeAllServices() throws(PeripheralError) {
        try requirePoweredOn()
        let removed = server.removeAllServices(now: now())
        flush()
        for service in removed { report(.serviceRemoved(.success(service))) }
        deliverEvents()
    }

    public var services: [PublishedService] { server.services }

    /// Holds Service Changed back until `releaseServiceChanged()`, so the services removed and
    /// added in between reach each central as one change (`GATTServer.holdServiceChanged`).
    public func holdServiceChanged() {
        server.holdServiceChanged()
    }

    /// One Service Changed indication over every handle changed since `holdServiceChanged()`.
    public func releaseServiceChanged() {
        server.releaseServiceChanged(now: now())
        flush()
    }

    /// Sends a value to subscribed centrals (all, or those in `centrals`). False when the transmit
    /// queue is full: nothing was sent, and one `readyToUpdateSubscribers` follows when room frees.
    public func updateValue(
        _ value: [UInt8], for characteristic: PublishedCharacteristic,
        onSubscribedCentrals centrals: [CentralID]? = nil
    ) throws(PeripheralError) -> Bool {
        let sent = try onServer { () throws(GATTServerError) in
            try server.updateValue(value, for: characteristic, to: centrals, now: now())
        }
        // Updates only, never an event: nothing to deliver.
        if server.hasOutput { sendOutput() }
        return sent
    }

    /// `updateValue(_:for:onSubscribedCentrals:)` for one central, with no list made for it: the
    /// notify driver sends each central its own updates, one call per notification. A
    /// notification goes to the link as the server hands it back, not through the output.
    public func updateValue(
        _ value: [UInt8], for characteristic: PublishedCharacteristic, onSubscribedCentral central: CentralID
    ) throws(PeripheralError) -> Bool {
        let update = try onServer { () throws(GATTServerError) in
            try server.updateValue(value, for: characteristic, toCentral: central, now: now())
        }
        switch update {
        case .notification(let notification):
            link.sendUpdate(notification, to: central)
            return true
        case .handled:
            // Updates only, never an event: nothing to deliver.
            if server.hasOutput { sendOutput() }
            return true
        case .refused:
            return false
        }
    }

    /// One of the server's `updateValue`s, when powered on, its error the peripheral's. Inlined:
    /// called, the closure's captures (the value, the peripheral) were passed retained, for every
    /// update.
    @inline(__always)
    private func onServer<Result>(_ call: () throws(GATTServerError) -> Result) throws(PeripheralError) -> Result {
        try requirePoweredOn()
        do throws(GATTServerError) { return try call() } catch { throw .server(error) }
    }

    /// The longest value one update carries to `central` (its ATT_MTU − 3); longer values are
    /// truncated for it. Nil when the central is not connected.
    public func maximumUpdateValueLength(for central: CentralID) -> Int? {
        server.snapshot(of: central)?.maximumUpdateValueLength
    }

    public var connectedCentrals: [CentralID] { server.connectedCentrals }

    /// Asks for low, medium or high latency on one central's connection; a wish, not a promise.
    public func setDesiredConnectionLatency(_ latency: ConnectionLatency, for central: CentralID) throws(PeripheralError) {
        try requirePoweredOn()
        guard server.snapshot(of: central) != nil else { throw .server(.unknownCentral(central)) }
        link.requestConnectionLatency(latency, for: central)
    }

    // MARK: Host-facing

    /// The controller's state. Leaving poweredOn disconnects every central (each unsubscribed).
    public func updateState(_ newState: PeripheralState) {
        guard newState != state else { return }
        state = newState
        if newState != .poweredOn {
            for central in server.connectedCentrals { disconnect(central) }
        }
        emit(.stateChanged(newState))
    }

    public func centralConnected(_ central: CentralID, security: LinkSecurity = .unencrypted) {
        guard state == .poweredOn, server.snapshot(of: central) == nil else { return }
        server.connect(central, security: security)
        emit(.centralConnected(central))
    }

    public func centralDisconnected(_ central: CentralID) {
        guard server.snapshot(of: central) != nil else { return }
        disconnect(central)
        deliverEvents()
    }

    public func securityChanged(_ security: LinkSecurity, for central: CentralID) {
        guard let before = server.snapshot(of: central)?.security, before != security else { return }
        server.setSecurity(security, for: central)
        emit(.securityChanged(central, security))
    }

    /// A bonded central's subscriptions from its bond, once its link is encrypted with the
    /// bond's key: they come back (with `subscribed` events) without the central writing its
    /// CCCDs again. With `databaseChanged` (the bond recorded another Database Hash) only its
    /// Service Changed subscription comes back and it is told every handle changed.
    /// `clientSupportedFeatures` come back too (robust caching: change-unaware after a change).
    public func restoreSubscriptions(
        _ clientConfigurations: [UInt16: UInt16], clientSupportedFeatures: UInt8 = 0, for central: CentralID,
        databaseChanged: Bool = false
    ) {
        server.restoreClientConfigurations(
            clientConfigurations, clientSupportedFeatures: clientSupportedFeatures, for: central,
            databaseChanged: databaseChanged, now: now())
        flush()
    }

    /// The Client Supported Features the central wrote (0 when none, or not connected).
    public func clientSupportedFeatures(of central: CentralID) -> UInt8 {
        server.clientSupportedFeatures(of: central)
    }

    /// Whether the central has a Service Changed indication still to confirm; false when it is
    /// not connected.
    public func awaitsServiceChangedConfirmation(_ central: CentralID) -> Bool {
        server.awaitsServiceChangedConfirmation(central)
    }

    /// The Database Hash as the characteristic carries it, for the host to keep with bonds.
    public var databaseHash: [UInt8] { server.databaseHash }

    /// The central's CCCD values now (handle → bits, non-zero only), for the host to persist a
    /// bonded central's subscriptions; nil when it is not connected.
    public func clientConfigurations(of central: CentralID) -> [UInt16: UInt16]? {
        server.snapshot(of: central)?.clientConfigurations
    }

    /// One ATT PDU from a central.
    public func receive(_ pdu: [UInt8], from central: CentralID) {
        server.receive(pdu, from: central, now: now())
        flush()
    }

    /// The link can take `count` more notification/indication PDUs.
    public func transmitRoomFreed(_ count: Int) {
        server.addTransmitCredits(count, now: now())
        flush()
    }

    /// `count` updates sent to `central` have left the controller, and the link can take as many
    /// more.
    public func updatesDelivered(_ count: Int, to central: CentralID) {
        server.updatesDelivered(count, to: central, now: now())
        flush()
    }

    public var nextTransactionDeadline: LoopInstant? { server.nextTransactionDeadline }

    public func expireTransactions() {
        server.expireTransactions(now: now())
        flush()
    }

    // MARK: Plumbing

    private func requirePoweredOn() throws(PeripheralError) {
        guard state == .poweredOn else { throw .notPoweredOn(state) }
    }

    /// The caller delivers the events.
    private func disconnect(_ central: CentralID) {
        server.disconnect(central)
        if server.hasOutput { sendOutput() }
        report(.centralDisconnected(central))
    }

    /// An event for the sink, delivered at the end of the call (`deliverEvents`); none is kept
    /// without a sink.
    private func report(_ event: PeripheralEvent) {
        guard eventSink != nil else { return }
        pendingEvents.append(event)
    }

    /// `report` for a call whose only event is `event`, delivered at once.
    private func emit(_ event: PeripheralEvent) {
        report(event)
        deliverEvents()
    }

    /// Hands the call's events to the sink, in order. A call the sink makes back into the
    /// peripheral reports its events behind them, and this loop delivers those too.
    private func deliverEvents() {
        guard !deliveringEvents, !pendingEvents.isEmpty, let eventSink else { return }
        deliveringEvents = true
        var next = 0
        while next < pendingEvents.count {
            let event = pendingEvents[next]
            next += 1
            eventSink(event)
        }
        pendingEvents.removeAllKeepingStorage()
        deliveringEvents = false
    }

    /// Sends the server's output and hands its events to the sink.
    private func flush() {
        // Most calls on the event path (credits back, deliveries) produce nothing: then there is
        // no buffer to exchange and empty.
        guard server.hasOutput else { return }
        sendOutput()
        deliverEvents()
    }

    /// Sends the server's output and reports its events, for the caller to deliver.
    @inline(__always)
    private func sendOutput() {
        // Swapped out of the property while in use (a swap neither retains nor releases), and
        // each item moved out in turn, not copied (which retained its PDU, released again when
        // the next call emptied the buffer). A call the link makes back into the peripheral
        // meanwhile (a failing transport ending its centrals) takes a buffer of its own.
        var items: [GATTServerOutput] = []
        swap(&items, &output)
        defer { swap(&items, &output) }
        server.takeOutput(into: &items)
        items.reverseForPoppingInOrder()
        while let item = items.popLast() {
            switch item {
            case .send(let pdu, let central):
                link.send(pdu, to: central)
            case .sendUpdate(let update, let central):
                link.sendUpdate(update, to: central)
            case .event(.subscribed(let central, let characteristic)):
                report(.subscribed(central, characteristic))
            case .event(.unsubscribed(let central, let characteristic)):
                report(.unsubscribed(central, characteristic))
            case .event(.readyToUpdateSubscribers):
                report(.readyToUpdateSubscribers)
            case .event(.mtuChanged(let central, let mtu)):
                report(.maximumUpdateValueLengthChanged(central, Int(mtu) - 3))
            case .event(.transactionTimedOut(let central)):
                link.disconnectAfterTransactionTimeout(central)
            case .event(.writeCommandRefused(let central, let handle, let code)):
                report(.writeCommandRefused(central, handle: handle, code))
            case .event(.writesApplied):
                // Last in the output: the answer has gone to the link.
                server.handlers.applied()
            }
        }
    }
}
