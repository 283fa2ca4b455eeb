import BluetoothCore
import FoundationEssentials

/// The JSON form of values on MQTT: the value gattway publishes, and the `/set` payload it
/// accepts.
public enum ValueJSON {
    /// Longest `/set` payload parsed; longer ones are refused before parsing.
    public static let maximumPayloadLength = 4096

    /// A characteristic's value, its bytes on air under `encoding`, as a JSON literal: what a
    /// phone reading the characteristic reads, so MQTT and Bluetooth agree. Numbers print as the
    /// decimal the bytes carry, at the precision of the format, with no trailing zeros (JSON
    /// numbers carry no resolution); plain from 1e-6 up to below 1e21, with an exponent beyond
    /// (`1e-7`, `2.5e30`), as JavaScript prints them:
    /// - integer formats: raw × 10^exponent exactly, which is also the shortest decimal that
    ///   encodes back to the same integer (sint16 at exponent -2: 2150 → 21.5, -5 → -0.05;
    ///   uint8 at exponent 1: 25 → 250; without an exponent, the integer);
    /// - float32: the shortest decimal that reads back as the same Float (0.1, not the
    ///   0.10000000149011612 of the Float widened to a Double); float64: the same for Double;
    /// - SFLOAT and FLOAT (IEEE 11073): mantissa × 10^exponent exactly (364 × 10^-1 → 36.4).
    ///
    /// NaN, infinities and 11073's reserved values (NaN, NRes, ±INF, RFU) are `null` (JSON has no
    /// such numbers). Booleans are `true`/`false`, text a JSON string, and opaque bytes, or bytes
    /// that do not decode under `encoding`, a lowercase hex string (`"0aff"`).
    public static func literal(_ bytes: [UInt8], encoding: ValueEncoding) -> String {
        let value: SensorValue
        do throws(ValueError) {
            value = try encoding.decode(bytes)
        } catch {
            return quoted(bytes.hexString)
        }
        switch value {
        case .bool(let flag): return flag ? "true" : "false"
        case .number: return encoding.decimal(bytes)?.description ?? "null"
        case .text(let text): return quoted(text)
        case .bytes(let bytes): return quoted(bytes.hexString)
        }
    }

    /// Parses a `/set` payload for a characteristic encoded with `encoding`: a bare JSON value
    /// (`21.5`, `true`, `"text"`) or an object `{"value": ...}` (other keys, such as "ts", are
    /// ignored). Bytes characteristics take a hex string or an array of integers 0...255.
    /// Returns the value and its encoding on air; every refusal is a `ValueError` naming why.
    public static func parseSet(
        _ payload: [UInt8], encoding: ValueEncoding
    ) throws(ValueError)
        -> (value: SensorValue, bytes: [UInt8])
    {
        guard payload.count <= maximumPayloadLength else {
            throw .tooLong(length: payload.count, maximum: maximumPayloadLength)
        }
        guard String(validating: payload, as: UTF8.self) != nil else { throw .invalidUTF8 }
        let json: JSONValue
        do {
            json = try JSONDecoder().decode(JSONValue.self, from: Data(payload))
        } catch let error as JSONValue.Unsupported {
            throw .invalidJSON(error.reason)
        } catch {
            throw .invalidJSON(payload.isEmpty ? "empty payload" : "not parseable as JSON")
        }
        var candidate = json
        if case .object(let members) = json {
            guard let inner = members["value"] else { throw .invalidJSON("object without a \"value\" key") }
            candidate = inner
        }
        let value = try sensorValue(candidate, for: encoding.format)
        return (value, try encoding.encode(value))
    }

    private static func sensorValue(_ json: JSONValue, for format: ValueFormat) throws(ValueError) -> SensorValue {
        switch (format, json) {
        case (.bool, .bool(let flag)): return .bool(flag)
        case (.utf8, .string(let text)): return .text(text)
        case (.bytes, .string(let hex)):
            guard let bytes = [UInt8](hexString: hex) else {
                throw .wrongType(expected: format, got: "a string that is not hex")
            }
            return .bytes(bytes)
        case (.bytes, .array(let items)):
            var bytes: [UInt8] = []
            for item in items {
                guard case .number(let number) = item, let byte = UInt8(exactly: number) else {
                    throw .wrongType(expected: format, got: "an array holding \(item.kindName) \(item)")
                }
                bytes.append(byte)
            }
            return .bytes(bytes)
        case (_, .number(let number)) where format.isNumeric && format != .bool:
            return .number(number)
        default:
            throw .wrongType(expected: format, got: json.kindName)
        }
    }

    private static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20:
                let digits = String(control.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// Any JSON value, decoded strictly: `true` is never a number and `1` never a boolean.
enum JSONValue: Decodable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    struct Unsupported: Error {
        let reason: String
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let items = try? container.decode([JSONValue].self) {
            self = .array(items)
        } else if let members = try? container.decode([String: JSONValue].self) {
            self = .object(members)
        } else {
            throw Unsupported(reason: "a value that is not a JSON scalar, array or object")
        }
    }

    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .number(let number): "\(number)"
        case .string(let text): "\"\(text)\""
        case .array(let items): "[\(items.map(\.description).joined(separator: ","))]"
        case .object(let members): "{\(members.keys.sorted().joined(separator: ","))}"
        }
    }
}
