import FoundationEssentials
import Glibc

/// A JSON value that serialises with keys in the order given, so every payload gattway publishes
/// is byte-for-byte predictable (documented in the README and asserted in tests).
public indirect enum JSONText: Sendable, Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case string(String)
    case array([JSONText])
    case object([(String, JSONText)])
    /// JSON text printed elsewhere, placed as it is: a characteristic's value (`MirrorValue`).
    case literal(String)

    public static func == (lhs: JSONText, rhs: JSONText) -> Bool { lhs.encoded == rhs.encoded }

    public var encoded: String { String(decoding: bytes, as: UTF8.self) }

    /// The UTF-8 text, written as bytes: what a payload is.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return out
    }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .null: out += "null".utf8
        case .bool(let value): out += (value ? "true" : "false").utf8
        case .integer(let value): out += String(value).utf8
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .literal(let text): out += text.utf8
        }
    }

    /// Byte by byte over the UTF-8: only `"`, `\` and the control characters are escaped, all
    /// ASCII, so a multi-byte sequence (every byte of it ≥ 0x80) passes through whole.
    private static func writeString(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += #"\""#.utf8
            case UInt8(ascii: "\\"): out += #"\\"#.utf8
            case UInt8(ascii: "\n"): out += #"\n"#.utf8
            case UInt8(ascii: "\r"): out += #"\r"#.utf8
            case UInt8(ascii: "\t"): out += #"\t"#.utf8
            case ..<0x20:
                out += #"\u00"#.utf8
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0xf))
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }
}

/// Timestamps in payloads: ISO 8601, UTC, millisecond precision (`2026-11-22T01:47:24.123Z`),
/// the milliseconds truncated. Written out by hand from `gmtime_r`: one goes into every value
/// published, where a format style cost a fifth of the mirror's work per value.
enum MirrorTimestamp {
    static func string(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let seconds = interval.rounded(.down)
        // From the nanoseconds of the exact fraction, as Foundation's format style counts them.
        let millisecond = Int(((interval - seconds) * 1_000_000_000).rounded(.down)) / 1_000_000
        var time = time_t(seconds)
        var fields = tm()
        gmtime_r(&time, &fields)
        var text = [UInt8]()
        text.reserveCapacity(24)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(Int(fields.tm_year) + 1900, 4)
        text.append(UInt8(ascii: "-"))
        digits(Int(fields.tm_mon) + 1, 2)
        text.append(UInt8(ascii: "-"))
        digits(Int(fields.tm_mday), 2)
        text.append(UInt8(ascii: "T"))
        digits(Int(fields.tm_hour), 2)
        text.append(UInt8(ascii: ":"))
        digits(Int(fields.tm_min), 2)
        text.append(UInt8(ascii: ":"))
        digits(Int(fields.tm_sec), 2)
        text.append(UInt8(ascii: "."))
        digits(millisecond, 3)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }
}
