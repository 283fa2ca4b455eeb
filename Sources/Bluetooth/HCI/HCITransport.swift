/// A byte path to a Bluetooth controller, whatever carries it (user channel, TCP, Unix socket,
/// UART). Packets go out with `send`; packets in arrive on `incoming`, which finishes with an
/// error when the link breaks and without one after `close()`.
public protocol HCITransport: AnyObject, Sendable {
    /// Where this transport leads, for log lines.
    var spec: HCITransportSpec { get }
    /// Every packet from the controller, in order. Iterate it once.
    var incoming: AsyncThrowingStream<HCIPacket, any Error> { get }
    func send(_ packet: HCIPacket) throws(HCITransportError)
    func close()
}

/// Why a transport could not be opened or stopped working, worded for the person running
/// gattway: what happened and what to do.
public struct HCITransportError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// No permission to use the controller (state `unauthorized`).
        case permissionDenied
        /// Another program holds the controller.
        case busy
        /// The radio is blocked by rfkill.
        case rfkillBlocked
        /// The adapter, device file or kernel support is not there (state `unsupported`).
        case notFound
        /// The peer is not reachable right now (refused, reset); worth retrying.
        case unavailable
        /// The link broke while in use, or bytes from it made no sense.
        case linkLost
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
