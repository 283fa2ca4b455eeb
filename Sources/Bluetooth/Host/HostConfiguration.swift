import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP

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

/// Why a host operation was refused.
public struct HostError: Error, Equatable, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
