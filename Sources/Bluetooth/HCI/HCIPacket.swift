import BluetoothCore

/// The packet kinds HCI carries, with the H4 indicator byte that precedes each one on a stream
/// transport and on the Linux user channel (Core Vol 4 Part A 2).
public enum HCIPacketType: UInt8, Sendable {
    case command = 0x01
    case acl = 0x02
    case sco = 0x03
    case event = 0x04
    case iso = 0x05
}

/// One whole HCI packet as it crosses the host/controller boundary.
public enum HCIPacket: Equatable, Sendable {
    case command(HCICommand)
    case acl(HCIACLPacket)
    case event(HCIEvent)
    /// A kind the host does not use (SCO, ISO); kept so the stream stays in step.
    case other(type: HCIPacketType, bytes: [UInt8])
    /// A packet framed correctly whose content does not decode.
    case malformed(type: HCIPacketType, bytes: [UInt8], reason: HCIDecodingError)

    /// The packet with its H4 indicator byte in front.
    public var h4Bytes: [UInt8] {
        var bytes: [UInt8] = []
        appendH4(to: &bytes)
        return bytes
    }

    /// Appends the packet, its H4 indicator byte in front, to `buffer`: a transport writes every
    /// packet from one buffer it keeps, rather than allocating each packet's bytes (an ACL packet
    /// goes out for every notification).
    public func appendH4(to buffer: inout [UInt8]) {
        switch self {
        case .command(let command):
            buffer.append(HCIPacketType.command.rawValue)
            buffer.append(contentsOf: command.encoded)
        case .acl(let acl):
            buffer.append(HCIPacketType.acl.rawValue)
            acl.append(to: &buffer)
        case .event(let event):
            buffer.append(HCIPacketType.event.rawValue)
            buffer.append(contentsOf: event.encoded)
        case .other(let type, let bytes), .malformed(let type, let bytes, _):
            buffer.append(type.rawValue)
            buffer.append(contentsOf: bytes)
        }
    }
}

/// An ACL data packet (Core Vol 4 Part E 5.4.2).
public struct HCIACLPacket: Equatable, Sendable {
    /// Packet Boundary flag values used on LE links.
    public enum Boundary: UInt8, Sendable {
        /// First fragment of a non-flushable L2CAP PDU (host → controller on LE).
        case firstNonFlushable = 0b00
        case continuing = 0b01
        /// First fragment of an automatically flushable L2CAP PDU (controller → host on LE).
        case firstFlushable = 0b10
    }

    public var handle: UInt16
    public var boundary: Boundary
    public var data: [UInt8]

    public init(handle: UInt16, boundary: Boundary, data: [UInt8]) {
        self.handle = handle
        self.boundary = boundary
        self.data = data
    }

    /// A packet whose data is the first `prefixLength` bytes of `prefix` (first byte lowest),
    /// then `body`: the parts `HCITransport.sendACL` is given, copied together.
    public init(handle: UInt16, boundary: Boundary, prefix: UInt64, prefixLength: Int, body: ArraySlice<UInt8>) {
        precondition(prefixLength >= 0 && prefixLength <= 8, "an ACL packet's prefix is at most eight bytes")
        var data: [UInt8] = []
        data.reserveCapacity(prefixLength + body.count)
        withUnsafeBytes(of: prefix.littleEndian) { data.append(contentsOf: $0[0..<prefixLength]) }
        data.append(contentsOf: body)
        self.init(handle: handle, boundary: boundary, data: data)
    }

    public var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + data.count)
        append(to: &bytes)
        return bytes
    }

    /// Appends the encoded packet to `buffer`.
    public func append(to buffer: inout [UInt8]) {
        let header = Self.header(handle: handle, boundary: boundary, dataLength: data.count)
        withUnsafeBytes(of: header.littleEndian) { buffer.append(contentsOf: $0[1..<Self.h4HeaderLength]) }
        buffer.append(contentsOf: data)
    }

    /// The length of `header(handle:boundary:dataLength:)`: the H4 indicator, then the handle
    /// and flags and the data length.
    public static let h4HeaderLength = 5

    /// An ACL packet's H4 indicator and header, first byte lowest: a transport writes it beside
    /// the data rather than copy the data behind it.
    public static func header(handle: UInt16, boundary: Boundary, dataLength: Int) -> UInt64 {
        let handleAndFlags = handle & 0x0FFF | UInt16(boundary.rawValue) << 12
        return UInt64(HCIPacketType.acl.rawValue) | UInt64(handleAndFlags) << 8
            | UInt64(UInt16(truncatingIfNeeded: dataLength)) << 24
    }

    /// Decodes the packet after its H4 indicator; only the data is copied out of `bytes`.
    public init(decoding bytes: borrowing ArraySlice<UInt8>) throws(HCIDecodingError) {
        var reader = ByteReader(copy bytes)
        do {
            let header = try reader.readUInt16()
            let length = Int(try reader.readUInt16())
            guard length == reader.remainingCount else {
                throw HCIDecodingError.lengthMismatch(
                    what: "ACL data packet", declared: length, actual: reader.remainingCount)
            }
            let flag = UInt8((header >> 12) & 0b11)
            guard let boundary = Boundary(rawValue: flag) else {
                throw HCIDecodingError.invalidField(
                    what: "ACL data packet", detail: "packet boundary flag 0b11 is reserved")
            }
            self.init(handle: header & 0x0FFF, boundary: boundary, data: reader.readRemaining())
        } catch let error as HCIDecodingError {
            throw error
        } catch {
            throw HCIDecodingError.truncated(what: "ACL data packet header")
        }
    }
}

/// Why bytes from the controller are not a packet the host can use.
public enum HCIDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    case unknownPacketType(UInt8)
    case truncated(what: String)
    case lengthMismatch(what: String, declared: Int, actual: Int)
    case invalidField(what: String, detail: String)

    public var description: String {
        switch self {
        case .unknownPacketType(let type):
            "unknown HCI packet type 0x\([type].hexString) (expected 0x01-0x05)"
        case .truncated(let what): "truncated \(what)"
        case .lengthMismatch(let what, let declared, let actual):
            "\(what) declares \(declared) bytes but carries \(actual)"
        case .invalidField(let what, let detail): "invalid \(what): \(detail)"
        }
    }
}

extension HCIPacket {
    /// Decodes one packet given its H4 indicator and the bytes after it, in place: `body` is
    /// usually a slice of the buffer the packet was read into. The packet keeps none of it (what
    /// it holds on to, such as ACL data, is copied), so that buffer can be reused without copying;
    /// Number Of Completed Packets, which comes back for every packet sent, allocates nothing.
    ///
    /// `body` is borrowed, here and by the decoders it goes to, not owned (an initializer's
    /// default): an owned slice cost a retain of the buffer by the framer and a release by the
    /// decoder, for every packet.
    public init(type: HCIPacketType, body: borrowing ArraySlice<UInt8>) throws(HCIDecodingError) {
        switch type {
        case .command: self = .command(try HCICommand(decoding: copy body))
        case .acl: self = .acl(try HCIACLPacket(decoding: body))
        case .event: self = .event(try HCIEvent(decoding: body))
        case .sco, .iso: self = .other(type: type, bytes: Array(copy body))
        }
    }
}
