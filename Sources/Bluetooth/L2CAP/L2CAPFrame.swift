import BluetoothCore
import BluetoothHCI

/// The LE fixed channels gattway serves (Core Vol 3 Part A 2.1).
public enum L2CAPChannel {
    public static let att: UInt16 = 0x0004
    public static let leSignaling: UInt16 = 0x0005
    public static let securityManager: UInt16 = 0x0006
}

/// An L2CAP basic frame (B-frame, Core Vol 3 Part A 3.1): length, channel ID, payload.
///
/// The payload is kept as `head`, a few bytes held inline, then `body`: an upper layer's fixed
/// fields (an ATT notification's opcode and handle) apart from the value it carries, so a value
/// array shared with its owner goes out as it is, with no PDU array made to hold it plus its
/// header. Frames are equal when their channels and payload bytes are.
public struct L2CAPFrame: Equatable, Sendable {
    public var channel: UInt16
    public var head: Head
    public var body: [UInt8]

    public init(channel: UInt16, payload: [UInt8]) {
        self.init(channel: channel, head: Head(), body: payload)
    }

    public init(channel: UInt16, head: Head, body: [UInt8]) {
        self.channel = channel
        self.head = head
        self.body = body
    }

    /// Up to `capacity` bytes before a frame's body, held in an integer rather than an array.
    /// Inlinable: the ATT layer builds every update's head in another module, where each byte
    /// appended was a call (about 25 instructions; three per notification).
    public struct Head: Equatable, Sendable {
        @inlinable public static var capacity: Int { 4 }
        /// The bytes, first in the lowest byte.
        @usableFromInline var bits: UInt32 = 0
        public var count: Int { storedCount }
        @usableFromInline var storedCount = 0

        @inlinable
        public init() {}

        public subscript(position: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: bits >> (8 * position))
        }

        /// The head with `byte` after its bytes.
        @inlinable
        public func appending(_ byte: UInt8) -> Head {
            precondition(count < Self.capacity, "an L2CAP frame head holds at most \(Self.capacity) bytes")
            var head = self
            head.bits |= UInt32(byte) << (8 * count)
            head.storedCount += 1
            return head
        }

        /// The head with `value` after its bytes, little-endian.
        @inlinable
        public func appending(_ value: UInt16) -> Head {
            appending(UInt8(truncatingIfNeeded: value)).appending(UInt8(truncatingIfNeeded: value >> 8))
        }
    }

    /// `head` then `body`; the body itself when the head is empty, as in every frame received.
    public var payload: [UInt8] {
        guard head.count > 0 else { return body }
        return (0..<head.count).map { head[$0] } + body
    }

    public static func == (lhs: L2CAPFrame, rhs: L2CAPFrame) -> Bool {
        lhs.channel == rhs.channel && lhs.payload == rhs.payload
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: encodedLength)
        writer.write(UInt16(payloadLength))
        writer.write(channel)
        writer.write(contentsOf: payload)
        return writer.bytes
    }

    /// The length of the payload: the head's bytes and the body's.
    public var payloadLength: Int { head.count + body.count }

    /// The length of `encoded`: the basic header and the payload.
    public var encodedLength: Int { 4 + payloadLength }

    /// The ACL fragment of the encoded frame that starts at byte `offset`: at most
    /// `maxFragmentLength` bytes, marked as the frame's first fragment when `offset` is 0. The
    /// fragment's bytes stay where they lie (the frame's body is shared, its header and head are
    /// held in an integer), so a frame goes out fragment by fragment without being encoded whole
    /// or copied into a packet.
    public func fragment(from offset: Int, handle: UInt16, maxFragmentLength: Int) -> ACLFragment {
        precondition(maxFragmentLength > 0, "the controller's ACL buffer length must be positive")
        let end = min(offset + maxFragmentLength, encodedLength)
        // The basic header (length, channel; little-endian) and the head are at most eight bytes,
        // one integer; this fragment carries the part of it from `offset` on.
        let bodyStart = 4 + head.count
        var prefix: UInt64 = 0
        var prefixLength = 0
        if offset < bodyStart {
            let header = UInt64(UInt16(payloadLength)) | UInt64(channel) << 16 | UInt64(head.bits) << 32
            prefixLength = min(end, bodyStart) - offset
            prefix = header >> (8 * offset)
            if prefixLength < 8 { prefix &= (1 << (8 * prefixLength)) - 1 }
        }
        let bodyPart = end > bodyStart ? body[(max(offset, bodyStart) - bodyStart)..<(end - bodyStart)] : body[0..<0]
        return ACLFragment(
            handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing, prefix: prefix,
            prefixLength: prefixLength, body: bodyPart)
    }
}

/// One ACL packet's worth of an L2CAP frame, where its bytes lie: up to eight bytes of the
/// frame's basic header and head, held in an integer, then a stretch of its body. The host hands
/// the parts to the transport (`HCITransport.sendACL`), which writes them as they are.
public struct ACLFragment: Sendable {
    public let handle: UInt16
    public let boundary: HCIACLPacket.Boundary
    /// The header and head bytes this fragment carries, first byte lowest.
    public let prefix: UInt64
    public let prefixLength: Int
    public let body: ArraySlice<UInt8>

    /// How many bytes of the frame it carries.
    public var count: Int { prefixLength + body.count }

    /// The fragment as a packet of its own, its bytes copied together.
    public var packet: HCIACLPacket {
        HCIACLPacket(handle: handle, boundary: boundary, prefix: prefix, prefixLength: prefixLength, body: body)
    }
}

/// Rebuilds L2CAP frames from the ACL fragments of one connection (Core Vol 4 Part E 5.4.2,
/// Vol 3 Part A 7.2).
public struct L2CAPReassembler: Sendable {
    public enum Problem: Error, Equatable, Sendable, CustomStringConvertible {
        /// A continuing fragment came with no frame under way.
        case unexpectedContinuation(byteCount: Int)
        /// A new frame started before the previous one was complete; the partial one is dropped.
        case incompleteFrameDropped(received: Int, expected: Int)
        /// More bytes arrived than the frame's length field declared.
        case overlongFrame(declared: Int, received: Int)

        public var description: String {
            switch self {
            case .unexpectedContinuation(let count):
                "dropped a \(count)-byte ACL continuation fragment with no L2CAP frame under way"
            case .incompleteFrameDropped(let received, let expected):
                "dropped an incomplete L2CAP frame (\(received) of \(expected) bytes) when a new one started"
            case .overlongFrame(let declared, let received):
                "dropped an L2CAP frame declaring \(declared) bytes that carried \(received)"
            }
        }
    }

    private var partial: [UInt8] = []
    private var isAssembling = false

    public init() {}

    /// Feeds one fragment; returns the frames it completes and the problems it revealed (the
    /// offending bytes are dropped, later frames still get through).
    public mutating func push(_ packet: HCIACLPacket) -> (frames: [L2CAPFrame], problems: [Problem]) {
        var problems: [Problem] = []
        switch packet.boundary {
        case .firstFlushable, .firstNonFlushable:
            if isAssembling {
                problems.append(
                    .incompleteFrameDropped(
                        received: max(partial.count - 4, 0),
                        expected: declaredLength ?? 0))
            }
            partial = packet.data
            isAssembling = true
        case .continuing:
            guard isAssembling else {
                return ([], [.unexpectedContinuation(byteCount: packet.data.count)])
            }
            partial.append(contentsOf: packet.data)
        }
        guard let length = declaredLength else { return ([], problems) }
        let received = partial.count - 4
        if received < length { return ([], problems) }
        isAssembling = false
        defer { partial = [] }
        if received > length {
            problems.append(.overlongFrame(declared: length, received: received))
            return ([], problems)
        }
        let channel = UInt16(partial[2]) | UInt16(partial[3]) << 8
        return ([L2CAPFrame(channel: channel, payload: Array(partial[4...]))], problems)
    }

    private var declaredLength: Int? {
        partial.count >= 4 ? Int(partial[0]) | Int(partial[1]) << 8 : nil
    }
}
