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

    public var encoded: String {
        var out = ""
        write(to: &out)
        return out
    }

    public var bytes: [UInt8] { Array(encoded.utf8) }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .integer(let value): out += String(value)
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, (key, value)) in members.enumerated() {
                if index > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        case .literal(let text): out += text
        }
    }

    private static func writeString(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let digits = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// Timestamps in payloads: ISO 8601, UTC, millisecond precision (`2026-11-22T01:47:24.123Z`).
enum MirrorTimestamp {
    static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }
}
