import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP

/// One connected central. Identity is per connection: the same phone connecting again is a new
/// `Central` (its handle may be reused by the controller, its `connectionID` never is).
public struct Central: Hashable, Sendable, CustomStringConvertible {
    public let connectionID: UInt64
    public let handle: UInt16
    public let address: BluetoothAddress

    public init(connectionID: UInt64, handle: UInt16, address: BluetoothAddress) {
        self.connectionID = connectionID
        self.handle = handle
        self.address = address
    }

    public var description: String { "\(address) (handle 0x\(String(handle, radix: 16)))" }
}

extension ConnectionLatency {
    /// The connection parameters the host asks the central for (Vol 3 Part A 4.20): intervals
    /// in 1.25 ms, timeout in 10 ms units. Low: 15-30 ms; medium: 30-50 ms; high: 100-125 ms,
    /// skipping up to 4 events.
    public var parameters: ConnectionParameters {
        switch self {
        case .low: ConnectionParameters(intervalMin: 12, intervalMax: 24, latency: 0, supervisionTimeout: 500)
        case .medium: ConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 500)
        case .high: ConnectionParameters(intervalMin: 80, intervalMax: 100, latency: 4, supervisionTimeout: 600)
        }
    }
}

/// The ATT bearer of one connection (fixed channel 0x0004), handed to the ATT server when a
/// central connects. Safe to use from any thread; sending after disconnection does nothing.
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
    /// controller has sent the PDU (or the connection is gone).
    public func sendUpdate(_ pdu: [UInt8]) {
        transmitter.send(
            L2CAPFrame(channel: L2CAPChannel.att, payload: pdu), on: central.handle,
            isUpdate: true)
    }
}

/// What the host needs from the ATT/GATT server above it. The host calls these in order for each
/// central; PDUs of one central arrive in the order the central sent them.
public protocol ATTServer: AnyObject, Sendable {
    func hostStateChanged(_ state: PeripheralState)
    func centralConnected(_ bearer: ATTBearer)
    /// Also called for every central when the controller is lost.
    func centralDisconnected(_ central: Central)
    func received(_ pdu: [UInt8], from central: Central)
    /// The host can take `count` more update PDUs (notifications, indications) across all
    /// centrals: `transmitQueueCapacity` at first power-on, then one back for each update the
    /// controller has sent or that a disconnection or controller loss dropped. The server stops
    /// sending updates when it has no credits left: that is `updateValue` returning false.
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
    /// `count` update PDUs sent to `central` have left the controller (called just before the
    /// matching `transmitCreditsAvailable`), so a server can keep one stalled central from holding
    /// every credit.
    func updatesDelivered(_ count: Int, to central: Central)
}

extension ATTServer {
    /// A server that budgets credits only over all centrals ignores per-central deliveries.
    public func updatesDelivered(_ count: Int, to central: Central) {}
    /// A server without Client Supported Features has none to persist.
    public func clientSupportedFeatures(of central: Central) -> UInt8 { 0 }
    /// A server that never changes its database never has Service Changed to confirm.
    public func awaitsServiceChangedConfirmation(_ central: Central) -> Bool { false }
}

/// Everything the host reports, in order: for logs, tests and the program above.
public enum HostEvent: Equatable, Sendable {
    case stateChanged(PeripheralState)
    case advertisingStarted(AdvertisingPayload, extended: Bool)
    case advertisingStopped
    case connected(Central)
    case disconnected(Central, reason: HCIStatus)
    case dataLengthChanged(Central, maxTxOctets: UInt16, maxRxOctets: UInt16)
    case phyChanged(Central, txPHY: UInt8, rxPHY: UInt8)
    case connectionParametersChanged(Central, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16)
    case connectionParameterUpdateAnswered(Central, accepted: Bool)
    /// Passkey Entry: the user types this passkey on the central. nil when it is the fixed
    /// passkey from the configuration, which is never logged or published.
    case passkeyDisplayed(Central, passkey: UInt32?)
    /// Numeric Comparison: the user checks that the central shows this number and confirms with
    /// `confirmNumericComparison()` (only when `HostConfiguration.confirmsNumericComparison`).
    case numericComparison(Central, number: UInt32)
    /// Pairing finished; `identity` is the central's identity address (its connection address
    /// when it distributed none), `bonded` whether its keys were stored.
    case paired(Central, identity: BluetoothAddress, bonded: Bool)
    case pairingFailed(Central, reason: String)
    /// A central asked to pair while no pairing window was open; it got Pairing Failed.
    case pairingRefused(Central)
    /// The pairing window opened or closed (`PeripheralHost.openPairingWindow`, its time up).
    case pairingWindowChanged(open: Bool)
    /// The link's security changed: encrypted (with which key), or a bond was stored.
    case securityChanged(Central, BluetoothGATT.LinkSecurity)
}

/// Configuration of the host, from gattway's configuration and command line.
public struct HostConfiguration: Sendable {
    public var transport: HCITransportSpec
    /// Where the host keeps state across restarts (the static random address).
    public var stateDirectory: String
    /// Advertised from power-on; nil to advertise only when asked.
    public var advertising: AdvertisingSettings?
    /// Advertising stops while this many centrals are connected.
    public var maxCentrals: Int
    /// Update PDUs (notifications, indications) the host queues at most, over all centrals.
    public var transmitQueueCapacity: Int
    /// How long a command may go unanswered before the host gives up on it.
    public var commandTimeout: Duration
    /// Waits after a lost controller before each retry; the last one repeats.
    public var reconnectDelays: [Duration]
    /// How the host pairs (SMP); bonds are kept in `stateDirectory`.
    public var security: SecurityConfiguration
    /// Whether someone can confirm Numeric Comparison values (`confirmNumericComparison()`, a
    /// button); without that such pairings are refused, since accepting unseen would claim MITM
    /// protection nobody checked.
    public var confirmsNumericComparison: Bool
    /// With `security.pairing` `.window`: how long the pairing window opens at start when no
    /// central is bonded yet (zero: it stays closed until the owner opens it).
    public var firstStartPairingWindow: Duration
    /// Connection parameters to ask each central for when the connection it made does not meet
    /// them; nil asks nothing.
    public var preferredConnection: ConnectionParameters?

    public init(
        transport: HCITransportSpec, stateDirectory: String,
        advertising: AdvertisingSettings?, maxCentrals: Int = 8, transmitQueueCapacity: Int = 8,
        commandTimeout: Duration = .seconds(2),
        reconnectDelays: [Duration] = [.milliseconds(200), .seconds(1), .seconds(2), .seconds(5), .seconds(10)],
        security: SecurityConfiguration = .standard, confirmsNumericComparison: Bool = false,
        firstStartPairingWindow: Duration = .zero, preferredConnection: ConnectionParameters? = nil
    ) {
        self.transport = transport
        self.stateDirectory = stateDirectory
        self.advertising = advertising
        self.maxCentrals = maxCentrals
        self.transmitQueueCapacity = transmitQueueCapacity
        self.commandTimeout = commandTimeout
        self.reconnectDelays = reconnectDelays
        self.security = security
        self.confirmsNumericComparison = confirmsNumericComparison
        self.firstStartPairingWindow = firstStartPairingWindow
        self.preferredConnection = preferredConnection
    }
}

/// Why a host operation was refused.
public struct HostError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
