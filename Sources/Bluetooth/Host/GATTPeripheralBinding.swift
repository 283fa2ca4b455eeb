import BluetoothATT
import BluetoothCore
import BluetoothGATT
import EventLoop
import FoundationEssentials
import Logging
import StateFile

/// Connects a GATT `Peripheral` (BluetoothGATT) to the host: ATT PDUs both ways, the host's
/// state, transmit credits, disconnections, the latency wish and the ATT transaction timer.
///
///     let binding = GATTPeripheralBinding(configuration: gattConfiguration)
///     let host = PeripheralHost(
///         configuration: hostConfiguration, peripheral: binding, stateWriter: writer, logger: logger)
///     // the program: binding.peripheral.setEventSink(...), .add(...), .updateValue(...)
///     await host.run()   // until cancelled
///
/// The host calls it on its executor, the event loop, which is the peripheral's too: so each call
/// enters the peripheral synchronously (`onLoop`), without an executor switch per packet.
public final class GATTPeripheralBinding: ATTServer, Sendable {
    public let peripheral: Peripheral
    private let link: HostPeripheralLink
    /// Wakes the peripheral at its ATT transaction deadline; on the loop, the peripheral's executor.
    private let expiryTimer: DeadlineTimer
    /// The address behind each `CentralID`, recorded before the peripheral hears of the central,
    /// so whatever handles its events can name it. Kept after a disconnection (the events of a
    /// central that has gone still name it) until the connection handle is reused. Loop-bound:
    /// the host records it and the handlers of the peripheral's events (the MQTT mirror) read it,
    /// all on the loop.
    private let addresses = LoopBound<[CentralID: BluetoothAddress]>([:])

    public init(configuration: GATTServer.Configuration = .init()) {
        link = HostPeripheralLink()
        let peripheral = Peripheral(configuration: configuration, link: link)
        self.peripheral = peripheral
        expiryTimer = DeadlineTimer { timer in
            let next = peripheral.onLoop { peripheral in
                peripheral.expireTransactions()
                return peripheral.nextTransactionDeadline
            }
            timer.schedule(at: next)
        }
    }

    /// The id the peripheral and its events give `central`.
    public static func centralID(_ central: Central) -> CentralID {
        CentralID(UInt16(truncatingIfNeeded: central.connectionID))
    }

    public func hostRunning(_ host: PeripheralHost?) { link.host.value = host }

    public func hostStateChanged(_ state: PeripheralState) {
        peripheral.onLoop(with: state) { $0.updateState($1) }
    }

    /// The address of the central the peripheral's events call `id`; on the loop.
    public func address(of id: CentralID) -> BluetoothAddress? {
        addresses.value[id]
    }

    public func centralConnected(_ bearer: ATTBearer) {
        let id = Self.centralID(bearer.central)
        addresses.value[id] = bearer.central.address
        link.register(bearer, as: id)
        peripheral.onLoop(with: id) { $0.centralConnected($1) }
    }

    public func centralDisconnected(_ central: Central) {
        let id = Self.centralID(central)
        peripheral.onLoop(with: id) { $0.centralDisconnected($1) }
        link.unregister(id)
    }

    public func received(_ pdu: [UInt8], from central: Central) {
        peripheral.onLoop(with: (pdu, Self.centralID(central))) { $0.receive($1.0, from: $1.1) }
        armTransactionTimer()
    }

    public func updatesDelivered(_ count: Int, to central: Central) {
        // One entry for both: this runs for every update the controller sends.
        let deadline = peripheral.onLoop(with: (count, Self.centralID(central))) {
            $0.updatesDelivered($1.0, to: $1.1)
            return $0.nextTransactionDeadline
        }
        if let deadline { expiryTimer.schedule(at: deadline) }
    }

    public func transmitCreditsAvailable(_ count: Int) {
        peripheral.onLoop(with: count) { $0.transmitRoomFreed($1) }
        armTransactionTimer()
    }

    public func securityChanged(_ security: LinkSecurity, for central: Central) {
        peripheral.onLoop(with: (security, Self.centralID(central))) { $0.securityChanged($1.0, for: $1.1) }
    }

    public func restoreSubscriptions(
        _ clientConfigurations: [UInt16: UInt16], clientSupportedFeatures: UInt8, for central: Central,
        databaseChanged: Bool
    ) {
        let restored = (clientConfigurations, clientSupportedFeatures, Self.centralID(central), databaseChanged)
        peripheral.onLoop(with: restored) {
            $0.restoreSubscriptions($1.0, clientSupportedFeatures: $1.1, for: $1.2, databaseChanged: $1.3)
        }
        armTransactionTimer()
    }

    public func databaseHash() -> [UInt8] {
        peripheral.onLoop { $0.databaseHash }
    }

    public func clientSupportedFeatures(of central: Central) -> UInt8 {
        peripheral.onLoop(with: Self.centralID(central)) { $0.clientSupportedFeatures(of: $1) }
    }

    public func awaitsServiceChangedConfirmation(_ central: Central) -> Bool {
        peripheral.onLoop(with: Self.centralID(central)) { $0.awaitsServiceChangedConfirmation($1) }
    }

    public func clientConfigurations(of central: Central) -> [UInt16: UInt16] {
        peripheral.onLoop(with: Self.centralID(central)) { $0.clientConfigurations(of: $1) } ?? [:]
    }

    /// Wakes the peripheral at its next ATT transaction deadline (an unconfirmed indication).
    private func armTransactionTimer() {
        guard let deadline = peripheral.onLoop({ $0.nextTransactionDeadline }) else { return }
        expiryTimer.schedule(at: deadline)
    }
}

/// The peripheral's outbound seam, implemented over the host's ATT bearers. Its callers are all
/// on the loop (the host registering a central's bearer, the peripheral sending), so the bearers
/// are loop-bound, not locked.
final class HostPeripheralLink: PeripheralLink, Sendable {
    /// A list searched by id, not a table keyed by it: there are a handful of centrals, and every
    /// PDU sent looked its bearer up, hashing the id.
    private let bearers = LoopBound<[(id: CentralID, bearer: ATTBearer)]>([])
    /// The host while it runs, for disconnections and latency requests. Strong, and so a cycle
    /// only while it runs: a weak reference would give the host a side table, and every retain
    /// and release of it, on every packet, would take the runtime's slow path
    /// (docs/performance.md).
    let host = LoopBound<PeripheralHost?>(nil)

    func register(_ bearer: ATTBearer, as id: CentralID) {
        bearers.value.removeAll { $0.id == id }
        bearers.value.append((id, bearer))
    }

    func unregister(_ id: CentralID) { bearers.value.removeAll { $0.id == id } }

    func send(_ pdu: [UInt8], to central: CentralID) {
        bearer(of: central)?.send(pdu)
    }

    func sendUpdate(_ update: ATTUpdate, to central: CentralID) {
        bearer(of: central)?.sendUpdate(update)
    }

    private func bearer(of central: CentralID) -> ATTBearer? {
        bearers.value.first { $0.id == central }?.bearer
    }

    private func target(_ central: CentralID) -> (Central, PeripheralHost)? {
        guard let bearer = bearer(of: central), let host = host.value else { return nil }
        return (bearer.central, host)
    }

    func disconnectAfterTransactionTimeout(_ central: CentralID) {
        guard let (connected, host) = target(central) else { return }
        Task { try? await host.disconnect(connected) }
    }

    func requestConnectionLatency(_ latency: ConnectionLatency, for central: CentralID) {
        guard let (connected, host) = target(central) else { return }
        Task { try? await host.setDesiredConnectionLatency(latency, for: connected) }
    }
}

extension PeripheralHost {
    /// gattway's entry point: a host serving the GATT peripheral of `binding` over the controller
    /// named by `configuration.transport` (an `HCITransportSpec`), keeping state in
    /// `configuration.stateDirectory` and advertising `configuration.advertising`. Call `run()`;
    /// it returns when its task is cancelled.
    public init(
        configuration: HostConfiguration, peripheral binding: GATTPeripheralBinding, stateWriter: StateFileWriter,
        logger: Logger
    ) {
        self.init(configuration: configuration, server: binding, stateWriter: stateWriter, logger: logger)
    }
}
