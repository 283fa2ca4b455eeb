/// Splits an H4 byte stream into packets (Core Vol 4 Part A 2), however the bytes arrive: one
/// at a time, several packets per read, or a header split across reads.
///
/// The user channel delivers exactly one packet per read with the same indicator byte in front,
/// so it goes through this framer too.
public struct H4Framer: Sendable {
    private var buffer: [UInt8] = []

    public init() {}

    /// Bytes held back until the rest of their packet arrives.
    public var pendingByteCount: Int { buffer.count }

    /// Appends `bytes` and hands every packet now complete to `receive`, in order, until it
    /// returns false (the transport's receiver closed the link); the bytes after the last packet
    /// handed on are held back, as an incomplete packet's are. No list of packets is made: each
    /// goes to the receiver as it is framed.
    ///
    /// A packet whose frame is whole but whose content does not decode comes out as
    /// `.malformed`. An unknown indicator byte means the stream is out of step and cannot be trusted again:
    /// that throws, and the caller drops the transport.
    ///
    /// Takes a slice, not any sequence: a generic method called from another module runs
    /// unspecialized, a byte at a time through witness tables, on every inbound packet. With
    /// nothing held back (every read of the user channel, most reads of a stream), the packets
    /// are framed straight from `bytes` and only an incomplete tail is kept.
    public mutating func push(
        _ bytes: ArraySlice<UInt8>, receive: (consuming HCIPacket) -> Bool
    ) throws(HCIDecodingError) {
        guard buffer.isEmpty else {
            buffer.append(contentsOf: bytes)
            do {
                buffer.removeFirst(try Self.frame(buffer[...], receive: receive))
            } catch {
                buffer.removeAll()
                throw error
            }
            return
        }
        let framed = try Self.frame(bytes, receive: receive)
        if framed < bytes.count { buffer.append(contentsOf: bytes.dropFirst(framed)) }
    }

    /// Hands every whole packet at the front of `bytes` to `receive` until it returns false;
    /// returns how many bytes the packets handed on took.
    private static func frame(
        _ bytes: ArraySlice<UInt8>, receive: (consuming HCIPacket) -> Bool
    ) throws(HCIDecodingError) -> Int {
        var start = bytes.startIndex
        while start < bytes.endIndex {
            guard let type = HCIPacketType(rawValue: bytes[start]) else { throw .unknownPacketType(bytes[start]) }
            let headerLength = headerLength(of: type)
            guard bytes.endIndex - start - 1 >= headerLength else { break }
            let header = start + 1
            let bodyLength = headerLength + payloadLength(of: type, headerAt: header, in: bytes)
            guard bytes.endIndex - header >= bodyLength else { break }
            let body = bytes[header..<header + bodyLength]
            start = header + bodyLength
            let packet: HCIPacket
            do {
                packet = try HCIPacket(type: type, body: body)
            } catch {
                // Framing is intact, only this packet is bad: hand it on for a log line.
                packet = .malformed(type: type, bytes: Array(body), reason: error)
            }
            guard receive(packet) else { break }
        }
        return start - bytes.startIndex
    }

    static func headerLength(of type: HCIPacketType) -> Int {
        switch type {
        case .command: 3  // opcode(2) length(1)
        case .acl: 4  // handle+flags(2) length(2)
        case .sco: 3  // handle+flags(2) length(1)
        case .event: 2  // code(1) length(1)
        case .iso: 4  // handle+flags(2) length(14 bits)
        }
    }

    static func payloadLength(of type: HCIPacketType, headerAt index: Int, in bytes: ArraySlice<UInt8>) -> Int {
        switch type {
        case .command: Int(bytes[index + 2])
        case .acl: Int(bytes[index + 2]) | Int(bytes[index + 3]) << 8
        case .sco: Int(bytes[index + 2])
        case .event: Int(bytes[index + 1])
        case .iso: Int(bytes[index + 2]) | Int(bytes[index + 3] & 0x3F) << 8
        }
    }
}
