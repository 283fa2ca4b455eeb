/// Little-endian reading of a packet, as every Bluetooth layer encodes its fields.
///
/// Reads never trap: running past the end throws `ByteReader.Error.truncated`, so a malformed
/// packet becomes an error at the layer that parses it.
///
/// Reads a slice in place: a packet is decoded straight from the buffer it was read into, and
/// only the bytes a decoded value keeps (`readBytes`, `readRemaining`) are copied.
///
/// The reads are inlinable: every layer above decodes with them in another module, where a call
/// for each field cost more than the field's bytes (a Number Of Completed Packets event, one per
/// packet sent, spent about 200 instructions in them; docs/performance.md).
public struct ByteReader: Sendable {
    public enum Error: Swift.Error, Equatable, Sendable {
        case truncated(needed: Int, available: Int)
    }

    @usableFromInline let bytes: ArraySlice<UInt8>
    /// How many bytes are read, counted from the first byte given.
    public var offset: Int { position }
    @usableFromInline var position: Int

    @inlinable
    public init(_ bytes: ArraySlice<UInt8>, offset: Int = 0) {
        self.bytes = bytes
        position = offset
    }

    @inlinable
    public init(_ bytes: [UInt8], offset: Int = 0) {
        self.init(bytes[...], offset: offset)
    }

    @inlinable
    public var remainingCount: Int { bytes.count - position }
    @inlinable
    public var isAtEnd: Bool { position >= bytes.count }

    @inlinable @inline(__always)
    public mutating func readUInt8() throws -> UInt8 {
        try need(1)
        defer { position += 1 }
        return bytes[bytes.startIndex + position]
    }

    @inlinable @inline(__always)
    public mutating func readUInt16() throws -> UInt16 {
        UInt16(truncatingIfNeeded: try readLittleEndian(byteCount: 2))
    }

    @inlinable @inline(__always)
    public mutating func readUInt24() throws -> UInt32 {
        UInt32(truncatingIfNeeded: try readLittleEndian(byteCount: 3))
    }

    @inlinable @inline(__always)
    public mutating func readUInt32() throws -> UInt32 {
        UInt32(truncatingIfNeeded: try readLittleEndian(byteCount: 4))
    }

    @inlinable @inline(__always)
    public mutating func readUInt64() throws -> UInt64 {
        try readLittleEndian(byteCount: 8)
    }

    @inlinable
    public mutating func readBytes(_ count: Int) throws -> [UInt8] {
        try need(count)
        defer { position += count }
        let start = bytes.startIndex + position
        return Array(bytes[start..<start + count])
    }

    /// Everything not read yet.
    @inlinable
    public mutating func readRemaining() -> [UInt8] {
        defer { position = bytes.count }
        return Array(bytes.dropFirst(position))
    }

    @inlinable @inline(__always)
    mutating func readLittleEndian(byteCount: Int) throws -> UInt64 {
        try need(byteCount)
        let start = bytes.startIndex + position
        position += byteCount
        // `need` checked the range: each byte's own check is a compare the optimizer drops or
        // predicts, once this is inlined into the decoder.
        var value: UInt64 = 0
        for index in 0..<byteCount {
            value |= UInt64(bytes[start + index]) << (8 * index)
        }
        return value
    }

    @inlinable @inline(__always)
    func need(_ count: Int) throws {
        guard count >= 0, remainingCount >= count else {
            throw Error.truncated(needed: count, available: max(remainingCount, 0))
        }
    }
}

/// Little-endian building of a packet.
public struct ByteWriter: Sendable {
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: UInt8) { bytes.append(value) }

    public mutating func write(_ value: UInt16) { writeLittleEndian(UInt64(value), byteCount: 2) }

    public mutating func writeUInt24(_ value: UInt32) { writeLittleEndian(UInt64(value), byteCount: 3) }

    public mutating func write(_ value: UInt32) { writeLittleEndian(UInt64(value), byteCount: 4) }

    public mutating func write(_ value: UInt64) { writeLittleEndian(value, byteCount: 8) }

    public mutating func write<Bytes: Sequence>(contentsOf other: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: other)
    }

    private mutating func writeLittleEndian(_ value: UInt64, byteCount: Int) {
        for index in 0..<byteCount {
            bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index)))
        }
    }
}

extension Array where Element == UInt8 {
    /// Lower-case hex without separators, e.g. "0a1b".
    public var hexString: String {
        let digits = [Character]("0123456789abcdef")
        var text = ""
        text.reserveCapacity(count * 2)
        for byte in self {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }

    /// Parses hex text ("0a1b", "0A 1B" or "0a:1b"); nil when it is not whole bytes of hex.
    public init?(hexString text: String) {
        let digits = text.filter { $0 != " " && $0 != ":" && $0 != "-" }
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self = bytes
    }
}
