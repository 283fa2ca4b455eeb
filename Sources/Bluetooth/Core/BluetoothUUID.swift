/// A Bluetooth UUID: a SIG 16- or 32-bit short form, or a full 128-bit UUID.
///
/// Short forms are aliases inside the Bluetooth Base UUID (0000xxxx-0000-1000-8000-00805F9B34FB),
/// so `BluetoothUUID(0x180D)` equals the 128-bit UUID it stands for (Core Vol 3 Part B 2.5.1).
public struct BluetoothUUID: Hashable, Sendable, Comparable {
    /// The UUID's 128 bits, most significant first.
    public let high: UInt64
    public let low: UInt64

    static let baseHigh: UInt64 = 0x0000_0000_0000_1000
    static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    public init(_ short: UInt16) {
        self.init(uint32: UInt32(short))
    }

    public init(uint32 value: UInt32) {
        self.init(high: Self.baseHigh | (UInt64(value) << 32), low: Self.baseLow)
    }

    /// The 32-bit alias when this UUID lies inside the Base UUID, else nil.
    public var uint32Value: UInt32? {
        guard low == Self.baseLow, high & 0xFFFF_FFFF == Self.baseHigh else { return nil }
        return UInt32(high >> 32)
    }

    /// The 16-bit alias when this UUID has one, else nil.
    public var uint16Value: UInt16? {
        guard let value = uint32Value, value <= 0xFFFF else { return nil }
        return UInt16(value)
    }

    /// The shortest form ATT carries: 2 bytes for a 16-bit alias, else all 16 (ATT has no 32-bit
    /// form; Core Vol 3 Part F 3.2.1), little-endian.
    public var attBytes: [UInt8] {
        if let short = uint16Value { return [UInt8(short & 0xFF), UInt8(short >> 8)] }
        return uint128Bytes
    }

    /// All 128 bits, little-endian (the byte order on air).
    public var uint128Bytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: low >> (8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: high >> (8 * index))
        }
        return bytes
    }

    /// Decodes 2, 4 or 16 little-endian bytes; nil for any other length.
    public init?(littleEndianBytes bytes: [UInt8]) {
        switch bytes.count {
        case 2: self.init(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
        case 4:
            self.init(uint32: bytes.enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) })
        case 16:
            var high: UInt64 = 0
            var low: UInt64 = 0
            for index in 0..<8 {
                low |= UInt64(bytes[index]) << (8 * index)
                high |= UInt64(bytes[8 + index]) << (8 * index)
            }
            self.init(high: high, low: low)
        default: return nil
        }
    }

    /// Parses "180D", "0x180D", a 32-bit "0000180D", or the full
    /// "0000180D-0000-1000-8000-00805F9B34FB" form (case-insensitive).
    public init?(_ text: String) {
        var digits = Substring(text)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        if digits.count == 36 {
            let groups = digits.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
            digits = Substring(groups.joined())
        }
        guard digits.allSatisfy(\.isHexDigit) else { return nil }
        switch digits.count {
        case 4: self.init(UInt16(digits, radix: 16)!)
        case 8: self.init(uint32: UInt32(digits, radix: 16)!)
        case 32:
            guard let high = UInt64(digits.prefix(16), radix: 16),
                let low = UInt64(digits.suffix(16), radix: 16)
            else { return nil }
            self.init(high: high, low: low)
        default: return nil
        }
    }

    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

extension BluetoothUUID: CustomStringConvertible {
    /// "180D" for a 16-bit alias, the full upper-case 36-character form otherwise.
    public var description: String {
        if let short = uint16Value { return hex(UInt64(short), width: 4) }
        return fullString
    }

    /// Always the full 36-character form, e.g. "0000180D-0000-1000-8000-00805F9B34FB".
    public var fullString: String {
        let all = hex(high, width: 16) + hex(low, width: 16)
        var out = ""
        for (index, char) in all.enumerated() {
            if [8, 12, 16, 20].contains(index) { out.append("-") }
            out.append(char)
        }
        return out
    }
}
private func hex(_ value: UInt64, width: Int) -> String {
    let text = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, width - text.count)) + text
}
