import BluetoothATT
import BluetoothCore

/// One connected central, named by the host (its HCI connection handle is the natural choice).
public struct CentralID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "central#\(rawValue)" }
}

/// The link's security as the host knows it (from its Security Manager). The server only reads
/// it to answer permission checks with the right ATT error.
public struct LinkSecurity: Hashable, Sendable {
    public var isEncrypted: Bool
    /// The encryption key came from an authenticated (MITM-protected) pairing.
    public var isAuthenticated: Bool
    /// Key size in bytes (7–16) when encrypted.
    public var encryptionKeySize: Int
    /// The program has authorized this central for attributes that require authorization.
    public var isAuthorized: Bool
    /// The link is encrypted with a key stored in a bond.
    public var isBonded: Bool
    /// A bond is stored for the central's address, so it holds a key it can encrypt with, even
    /// while the link is not encrypted yet.
    public var bondExists: Bool

    public init(
        isEncrypted: Bool, isAuthenticated: Bool = false, encryptionKeySize: Int = 16,
        isAuthorized: Bool = false, isBonded: Bool = false, bondExists: Bool = false
    ) {
        self.isEncrypted = isEncrypted
        self.isAuthenticated = isAuthenticated
        self.encryptionKeySize = encryptionKeySize
        self.isAuthorized = isAuthorized
        self.isBonded = isBonded
        self.bondExists = bondExists || isBonded
    }

    /// A fresh LE link: no encryption, nothing authenticated or authorized.
    public static let unencrypted = LinkSecurity(isEncrypted: false, encryptionKeySize: 0)
}

/// A central reads a dynamic characteristic value, or a dynamic descriptor of the characteristic
/// (`descriptor` non-nil). The handler returns the whole current value; the server applies `offset`
/// (answering Invalid Offset past the end) and truncates to the MTU.
public struct GATTReadRequest: Hashable, Sendable {
    public let central: CentralID
    public let characteristic: PublishedCharacteristic
    public let offset: Int
    /// The dynamic descriptor read; nil for the characteristic value.
    public let descriptor: PublishedDescriptor?

    public init(
        central: CentralID, characteristic: PublishedCharacteristic, offset: Int,
        descriptor: PublishedDescriptor? = nil
    ) {
        self.central = central
        self.characteristic = characteristic
        self.offset = offset
        self.descriptor = descriptor
    }
}

/// Which ATT write carried a value (Vol 3 Part F 3.4.5 and 3.4.6).
public enum GATTWriteKind: String, Hashable, Sendable {
    /// Write Request: answered by a Write Response or an error.
    case request
    /// Write Command (write without response): never answered.
    case command
    /// Prepare Write Requests applied by an Execute Write (a long or reliable write).
    case prepared
}

/// One value of a write batch. A Write Request is a batch of one; an Execute Write delivers every
/// prepared value at once (contiguous parts of one characteristic joined into one request).
/// A write to a dynamic descriptor names it in `descriptor`.
public struct GATTWriteRequest: Hashable, Sendable {
    public let central: CentralID
    public let characteristic: PublishedCharacteristic
    public let offset: Int
    public let value: [UInt8]
    public let kind: GATTWriteKind
    /// The dynamic descriptor written; nil for the characteristic value.
    public let descriptor: PublishedDescriptor?

    public init(
        central: CentralID, characteristic: PublishedCharacteristic, offset: Int, value: [UInt8],
        kind: GATTWriteKind, descriptor: PublishedDescriptor? = nil
    ) {
        self.central = central
        self.characteristic = characteristic
        self.offset = offset
        self.value = value
        self.kind = kind
        self.descriptor = descriptor
    }

    /// The attribute written: the descriptor's handle, or the characteristic value's.
    public var handle: UInt16 { descriptor?.handle ?? characteristic.valueHandle }
}

/// Handlers serving dynamic characteristic values and dynamic descriptors.
///
/// They are synchronous on purpose: the server answers each request before it looks at the next
/// PDU, which is what keeps "one outstanding request, answered exactly once" true by construction.
/// They must not block; a gateway serves its latest cached sensor value.
public struct GATTRequestHandlers: Sendable {
    /// Returns the characteristic's whole value, or the ATT error to answer.
    public var read: @Sendable (GATTReadRequest) -> Result<[UInt8], ATTErrorCode>
    /// Applies all writes of a batch, or none of them and returns the single error to answer.
    /// Write Commands also come here; their result is not answered. It runs inside the server's
    /// handling of the request, so it must not call back into the server or the peripheral.
    public var write: @Sendable ([GATTWriteRequest]) -> ATTErrorCode?
    /// Called once a request whose batch `write` applied has been answered (the answer handed to
    /// the link), in the same call and outside the server's handling of it: where the program
    /// acts on what the writes changed (tells other subscribers, drives an output), which may
    /// call the peripheral again.
    public var applied: @Sendable () -> Void

    public init(
        read: @escaping @Sendable (GATTReadRequest) -> Result<[UInt8], ATTErrorCode>,
        write: @escaping @Sendable ([GATTWriteRequest]) -> ATTErrorCode?,
        applied: @escaping @Sendable () -> Void = {}
    ) {
        self.read = read
        self.write = write
        self.applied = applied
    }

    /// What a server without a program answers: dynamic values are unavailable.
    public static let unavailable = GATTRequestHandlers(
        read: { _ in .failure(.unlikelyError) }, write: { _ in .unlikelyError })
}

/// Something the program or the host must learn about.
public enum GATTServerEvent: Hashable, Sendable {
    /// The central enabled notifications or indications (its CCCD went from 0 to non-zero).
    case subscribed(CentralID, PublishedCharacteristic)
    /// The central disabled them, or disconnected while subscribed.
    case unsubscribed(CentralID, PublishedCharacteristic)
    /// An `updateValue` returned false earlier and the transmit queue has room again.
    case readyToUpdateSubscribers
    /// The central's ATT_MTU changed; its maximum update length is now `mtu - 3`.
    case mtuChanged(CentralID, mtu: UInt16)
    /// An indication went unconfirmed for 30 s (Vol 3 Part F 3.3.3): the bearer is dead, the
    /// server sends and accepts nothing more on it, and the host must disconnect the central.
    case transactionTimedOut(CentralID)
    /// A Write Command (write without response) that could not be applied: it gets no answer
    /// (Vol 3 Part F 3.4.5.3), so this is the only trace of it.
    case writeCommandRefused(CentralID, handle: UInt16, ATTErrorCode)
    /// The program's `write` handler applied a batch; last in the output of the PDU that carried
    /// it, after its answer, for the peripheral to call `GATTRequestHandlers.applied`.
    case writesApplied
}

/// What the server produced, in order: PDUs for the host to transmit, and events.
public enum GATTServerOutput: Hashable, Sendable {
    /// A response (or error response) to the central's request: sent outside the transmit credits.
    case send([UInt8], to: CentralID)
    /// A Handle Value Notification or Indication: it spent one of the server's transmit credits,
    /// which come back when the controller reports it delivered (or the link drops it). Not
    /// encoded: the link puts its opcode and handle before the value as it sends it.
    case sendUpdate(ATTUpdate, to: CentralID)
    case event(GATTServerEvent)
}

/// Misuse of the server's program-facing calls.
public enum GATTServerError: Error, Hashable, Sendable, CustomStringConvertible {
    case characteristicNotPublished(BluetoothUUID)
    case characteristicCannotNotify(BluetoothUUID)
    case unknownCentral(CentralID)

    public var description: String {
        switch self {
        case .characteristicNotPublished(let uuid): "characteristic \(uuid) is not published"
        case .characteristicCannotNotify(let uuid): "characteristic \(uuid) has neither the notify nor the indicate property"
        case .unknownCentral(let id): "\(id) is not connected"
        }
    }
}

/// A read-only view of one central's ATT state, for the program and for invariant checks.
public struct CentralSnapshot: Hashable, Sendable {
    public let mtu: UInt16
    public let security: LinkSecurity
    /// CCCD handle → configuration bits (only non-zero entries).
    public let clientConfigurations: [UInt16: UInt16]
    public let clientSupportedFeatures: UInt8
    public let preparedWriteCount: Int
    public let outstandingIndicationHandle: UInt16?
    public let queuedIndicationCount: Int
    public let isChangeAware: Bool
    public let isClosed: Bool

    /// The longest value one notification or indication carries to this central.
    public var maximumUpdateValueLength: Int { Int(mtu) - 3 }
}
