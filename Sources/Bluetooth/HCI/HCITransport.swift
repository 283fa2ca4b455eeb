/// A byte path to a Bluetooth controller, whatever carries it (user channel, TCP, Unix socket,
/// UART). Packets go out with `send`; packets in are handed to the receiver given to `start`.
public protocol HCITransport: AnyObject, Sendable {
    /// Where this transport leads, for log lines.
    var spec: HCITransportSpec { get }
    /// Starts taking packets from the controller. `receive` gets each one, in order, on the event
    /// loop's thread, from the read that framed it: no queue and no task in between, so a host on
    /// the loop handles a packet where it arrives. `ended` is called once when the link ends: with
    /// why it broke, or nil after `close()`. Nothing is read before `start`; call it once.
    func start(
        receive: @escaping @Sendable (HCIPacket) -> Void, ended: @escaping @Sendable (HCITransportError?) -> Void)
    func send(_ packet: HCIPacket) throws(HCITransportError)
    /// Sends an ACL data packet whose data is the first `prefixLength` bytes of `prefix` (first
    /// byte lowest, at most eight), then `body`: a fragment of an L2CAP frame, written from where
    /// its bytes lie, with no packet assembled for it (one goes out for every notification).
    func sendACL(
        handle: UInt16, boundary: HCIACLPacket.Boundary, prefix: UInt64, prefixLength: Int, body: ArraySlice<UInt8>
    ) throws(HCITransportError)
    /// Ends the link: `ended` gets nil, unless it already ended.
    func close()
}

extension HCITransport {
    /// The packet assembled and sent whole, for a transport that writes whole packets only.
    public func sendACL(
        handle: UInt16, boundary: HCIACLPacket.Boundary, prefix: UInt64, prefixLength: Int, body: ArraySlice<UInt8>
    ) throws(HCITransportError) {
        try send(.acl(HCIACLPacket(handle: handle, boundary: boundary, prefix: prefix, prefixLength: prefixLength, body: body)))
    }
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
