import BluetoothATT
import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP

/// The ATT bearer of one connection (fixed channel 0x0004), handed to the ATT server when a
/// central connects. Use it on the event loop, where the host calls the server (it sends through
/// the host's loop-bound `LinkTransmitter`, which traps anywhere else); sending after
/// disconnection does nothing.
public final class ATTBearer: Sendable {
    public let central: Central
    private let transmitter: LinkTransmitter

    init(central: Central, transmitter: LinkTransmitter) {
        self.central = central
        self.transmitter = transmitter
    }

    /// Queues a PDU for the central: a response, a confirmation-bound indication, anything.
    public func send(_ pdu: [UInt8]) {
        transmitter.send(L2CAPFrame(channel: L2CAPChannel.att, payload: pdu), on: central.handle)
    }

    /// Queues a notification or indication. It spends one of the transmit credits the host
    /// granted through `ATTServer.transmitCreditsAvailable(_:)`; the credit comes back once the
    /// controller has sent the PDU (or the connection is gone). The frame's head carries the
    /// opcode and handle and its body is the update's value array itself: queued until the
    /// controller has room, the notification holds the value it was sent with, and no PDU array
    /// is made for it.
    public func sendUpdate(_ update: ATTUpdate) {
        transmitter.send(
            L2CAPFrame(
                channel: L2CAPChannel.att, head: L2CAPFrame.Head().appending(update.opcode.rawValue).appending(update.handle),
                body: update.value),
            on: central.handle, isUpdate: true)
    }
}

/// What the host needs from the ATT/GATT server above it. The host calls these in order for each
/// central; PDUs of one central arrive in the order the central sent them.
public protocol ATTServer: AnyObject, Sendable {
    /// The host started running (`host` is running it) or stopped (nil), on the loop: a server
    /// that asks the host for things (a disconnection, a connection latency) keeps it meanwhile.
    func hostRunning(_ host: PeripheralHost?)
    func hostStateChanged(_ state: PeripheralState)
    func centralConnected(_ bearer: ATTBearer)
    /// Also called for every central when the controller is lost.
    func centralDisconnected(_ central: Central)
    func received(_ pdu: [UInt8], from central: Central)
    /// The host can take `count` more update PDUs (notifications, indications) across all
    /// centrals: `transmitQueueCapacity` at first power-on, then one back for each update that a
    /// disconnection or controller loss dropped (those the controller sent come back through
    /// `updatesDelivered`). The server stops sending updates when it has no credits left: that is
    /// `updateValue` returning false.
    func transmitCreditsAvailable(_ count: Int)
    /// The central's link security changed (encryption on, pairing done, bond stored): the
    /// server checks attribute permissions against it.
    func securityChanged(_ security: BluetoothGATT.LinkSecurity, for central: Central)
    /// A bonded central's CCCD values (handle → bits) from its bond, once its link is encrypted
    /// with the bond's key: its subscriptions come back without it writing the CCCDs again.
    /// `databaseChanged`: the bond recorded another `databaseHash` than the server's now, so the
    /// stored handles are stale: the server tells the central every handle changed instead.
    /// `clientSupportedFeatures`: what the central wrote to Client Supported Features on an
    /// earlier bonded connection.
    func restoreSubscriptions(
        _ clientConfigurations: [UInt16: UInt16], clientSupportedFeatures: UInt8, for central: Central,
        databaseChanged: Bool)
    /// The Database Hash (Vol 3 Part G 7.3) of the attribute database now, kept with each bond.
    func databaseHash() -> [UInt8]
    /// Whether the central has a Service Changed indication still to confirm: until it has none,
    /// its bond keeps the Database Hash it had, so a central that leaves before it learns of a
    /// change (a reload's new layout) is told again when it comes back.
    func awaitsServiceChangedConfirmation(_ central: Central) -> Bool
    /// The central's Client Supported Features now, which the host persists in its bond.
    func clientSupportedFeatures(of central: Central) -> UInt8
    /// The central's CCCD values now (non-zero only), which the host persists in its bond.
    func clientConfigurations(of central: Central) -> [UInt16: UInt16]
    /// `count` update PDUs sent to `central` have left the controller, and the host can take as
    /// many more: their credits come back with them, in one call per central for each
    /// completed-packets event (this runs for every update sent). A server that counts the
    /// updates in flight per central keeps one stalled central from holding every credit.
    func updatesDelivered(_ count: Int, to central: Central)
}

extension ATTServer {
    /// A server that asks the host for nothing does not keep it.
    public func hostRunning(_ host: PeripheralHost?) {}
    /// A server that budgets credits only over all centrals takes the credits alone.
    public func updatesDelivered(_ count: Int, to central: Central) { transmitCreditsAvailable(count) }
    /// A server without Client Supported Features has none to persist.
    public func clientSupportedFeatures(of central: Central) -> UInt8 { 0 }
    /// A server that never changes its database never has Service Changed to confirm.
    public func awaitsServiceChangedConfirmation(_ central: Central) -> Bool { false }
}
