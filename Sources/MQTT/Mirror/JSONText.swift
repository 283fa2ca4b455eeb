import FoundationEssentials

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
/// the milliseconds truncated. Written out by hand, the calendar date from the day number: one
/// goes into every value published, where a format style cost a fifth of the mirror's work per
/// value, and `gmtime_r` (time zone rules it does not need) most of what was left.
enum MirrorTimestamp {
    static func string(_ date: Date) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(24)
        write(date, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends the 24 bytes of `date`'s timestamp to `out`.
    ///
    /// Grown once and filled in place: appended a digit at a time, each byte checked the array's
    /// capacity and uniqueness, about 1,000 instructions per MQTT value (docs/performance.md).
    /// The timestamp's fixed characters, as bytes made once (copied at once, not walked).
    private static let template = Array("0000-00-00T00:00:00.000Z".utf8)

    static func write(_ date: Date, to out: inout [UInt8]) {
        let interval = date.timeIntervalSince1970
        let wholeSeconds = interval.rounded(.down)
        // From the nanoseconds of the exact fraction, as Foundation's format style counts them.
        let millisecond = Int(((interval - wholeSeconds) * 1_000_000_000).rounded(.down)) / 1_000_000
        let seconds = Int(wholeSeconds)
        let (days, secondOfDay) = divideRoundingDown(seconds, 86_400)
        let (year, month, day) = civilDate(daysSince1970: days)
        let start = out.count
        out.append(contentsOf: template)
        out.withUnsafeMutableBufferPointer { text in
            /// `value`'s last `count` decimal digits, ending before `end`.
            func digits(_ value: Int, _ count: Int, endingAt end: Int) {
                var rest = value
                for index in stride(from: start + end - 1, through: start + end - count, by: -1) {
                    text[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                }
            }
            digits(year, 4, endingAt: 4)
            digits(month, 2, endingAt: 7)
            digits(day, 2, endingAt: 10)
            digits(secondOfDay / 3600, 2, endingAt: 13)
            digits(secondOfDay / 60 % 60, 2, endingAt: 16)
            digits(secondOfDay % 60, 2, endingAt: 19)
            digits(millisecond, 3, endingAt: 23)
        }
    }

    /// The proleptic Gregorian date of a day number (0 = 1970-01-01). Counted in 400-year eras
    /// of 146,097 days starting on 1 March, so the leap day is the last day of its year and the
    /// month lengths from March on follow `(153 * month + 2) / 5`.
    static func civilDate(daysSince1970 days: Int) -> (year: Int, month: Int, day: Int) {
        let (era, dayOfEra) = divideRoundingDown(days + 719_468, 146_097)  // 0000-03-01 to 1970-01-01
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (era * 400 + yearOfEra + (month <= 2 ? 1 : 0), month, day)
    }

    private static func divideRoundingDown(_ value: Int, _ divisor: Int) -> (quotient: Int, remainder: Int) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }
}
