/// A 48-bit device address (BD_ADDR) and its type, as HCI and SMP carry it.
///
/// The 48 bits are held in an integer, not an array of six bytes: an address is in every
/// `Central`, which the host copies on the way of every packet completed, and an array in it was
/// retained and released at each copy.
public struct BluetoothAddress: Hashable, Sendable, CustomStringConvertible {
    public enum Kind: UInt8, Sendable {
        case `public` = 0x00
        case random = 0x01
    }

    /// The address as a number: the on-air first byte is the least significant.
    private let bits: UInt64
    public let kind: Kind

    public init(littleEndianBytes bytes: [UInt8], kind: Kind = .public) {
        precondition(bytes.count == 6, "a BD_ADDR has six bytes")
        bits = bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        self.kind = kind
    }

    /// The six bytes in on-air (little-endian) order: bytes[5] is the most significant.
    public var bytes: [UInt8] { (0..<6).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) } }

    /// Parses "AA:BB:CC:DD:EE:FF" (most significant first, as people write it).
    public init?(_ text: String, kind: Kind = .public) {
        let parts = text.split(separator: ":")
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts.reversed() {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.init(littleEndianBytes: bytes, kind: kind)
    }

    public static let zero = BluetoothAddress(littleEndianBytes: [0, 0, 0, 0, 0, 0])

    /// "AA:BB:CC:DD:EE:FF", most significant byte first.
    public var description: String {
        bytes.reversed().map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return byte < 0x10 ? "0" + text : text
        }.joined(separator: ":")
    }

    /// A static random address has its two most significant bits set (Core Vol 6 Part B 1.3.2.1).
    public var isStaticRandom: Bool { kind == .random && mostSignificantByte & 0xC0 == 0xC0 }

    /// A resolvable private address has its two most significant bits 0b01.
    public var isResolvablePrivate: Bool { kind == .random && mostSignificantByte & 0xC0 == 0x40 }

    private var mostSignificantByte: UInt8 { UInt8(truncatingIfNeeded: bits >> 40) }
}
