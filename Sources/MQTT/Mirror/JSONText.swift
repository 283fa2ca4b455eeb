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
    /// A timestamp's length in bytes.
    static let length = 24
    /// The length of its text up to the milliseconds (`2026-11-22T01:47:24.`), the same for every
    /// timestamp of one second.
    static let secondLength = 20

    static func string(_ date: Date) -> String {
        var writer = MirrorTimestampWriter()
        return String(unsafeUninitializedCapacity: length) { text in
            writer.write(date, to: text.baseAddress!)
            return length
        }
    }

    /// `date`'s whole seconds since 1970, and its millisecond: from the nanoseconds of the exact
    /// fraction, as Foundation's format style counts them.
    static func split(_ date: Date) -> (second: Int, millisecond: Int) {
        let interval = date.timeIntervalSince1970
        let wholeSeconds = interval.rounded(.down)
        return (Int(wholeSeconds), Int(((interval - wholeSeconds) * 1_000_000_000).rounded(.down)) / 1_000_000)
    }

    /// Writes the `secondLength` bytes of `second`'s text at `text`.
    ///
    /// Into memory the caller sized, with no capacity, uniqueness or bounds check per byte: the
    /// timestamp goes into every value's payload, and written into an array, even grown once,
    /// it cost about 800 instructions per MQTT value (docs/performance.md).
    static func writeSecond(_ second: Int, to text: UnsafeMutablePointer<UInt8>) {
        let (days, secondOfDay) = divideRoundingDown(second, 86_400)
        let (year, month, day) = civilDate(daysSince1970: days)
        digits(year, 4, endingAt: 4, then: UInt8(ascii: "-"), in: text)
        digits(month, 2, endingAt: 7, then: UInt8(ascii: "-"), in: text)
        digits(day, 2, endingAt: 10, then: UInt8(ascii: "T"), in: text)
        digits(secondOfDay / 3600, 2, endingAt: 13, then: UInt8(ascii: ":"), in: text)
        digits(secondOfDay / 60 % 60, 2, endingAt: 16, then: UInt8(ascii: ":"), in: text)
        digits(secondOfDay % 60, 2, endingAt: 19, then: UInt8(ascii: "."), in: text)
    }

    /// Writes the last `length - secondLength` bytes of a timestamp at `text`, which points at its
    /// start.
    static func writeMillisecond(_ millisecond: Int, to text: UnsafeMutablePointer<UInt8>) {
        digits(millisecond, 3, endingAt: 23, then: UInt8(ascii: "Z"), in: text)
    }

    /// `value`'s last `count` decimal digits, ending before `end`; followed by `separator`.
    private static func digits(
        _ value: Int, _ count: Int, endingAt end: Int, then separator: UInt8, in text: UnsafeMutablePointer<UInt8>
    ) {
        var rest = value
        var index = end
        while index > end - count {
            index -= 1
            text[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        text[end] = separator
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

/// Writes timestamps (`MirrorTimestamp`), keeping the text of the last one's second: values come
/// many a second, and their timestamps then differ in the milliseconds alone, so the calendar
/// date and time of day are worked out once a second, not for every value.
struct MirrorTimestampWriter: Sendable {
    private var second = Int.min
    /// `MirrorTimestamp.secondLength` bytes: `second`'s text.
    private var secondText: (UInt64, UInt64, UInt32) = (0, 0, 0)

    /// Writes the `MirrorTimestamp.length` bytes of `date`'s timestamp at `text`.
    mutating func write(_ date: Date, to text: UnsafeMutablePointer<UInt8>) {
        let (second, millisecond) = MirrorTimestamp.split(date)
        let secondLength = MirrorTimestamp.secondLength
        if second == self.second {
            withUnsafeBytes(of: secondText) { UnsafeMutableRawPointer(text).copyMemory(from: $0.baseAddress!, byteCount: secondLength) }
        } else {
            MirrorTimestamp.writeSecond(second, to: text)
            self.second = second
            withUnsafeMutableBytes(of: &secondText) { $0.baseAddress!.copyMemory(from: text, byteCount: secondLength) }
        }
        MirrorTimestamp.writeMillisecond(millisecond, to: text)
    }
}
