import Foundation
import Testing

@testable import Values

struct ValueJSONTests {
    /// Bytes on air → the JSON a person reads: the decimal the bytes carry, at the format's
    /// precision, never the noise of a Float widened to a Double or of binary fractions.
    @Test(arguments: [
        // Integers, with and without a decimal exponent.
        (ValueFormat.uint8, Int8(0), [UInt8]([42]), "42"),
        (.uint8, 1, [25], "250"),
        (.uint8, 1, [0], "0"),
        (.sint8, 0, [0xFF], "-1"),
        (.uint16, 0, [0xFF, 0xFF], "65535"),
        (.uint16, -1, [3, 0], "0.3"),
        (.uint24, 0, [0xFF, 0xFF, 0xFF], "16777215"),
        (.uint32, 0, [0xFF, 0xFF, 0xFF, 0xFF], "4294967295"),
        (.sint32, 0, [0x00, 0x00, 0x00, 0x80], "-2147483648"),
        (.sint16, -2, [0x66, 0x08], "21.5"),
        (.sint16, -2, [0xCA, 0x09], "25.06"),
        (.sint16, -2, [0x34, 0x08], "21"),
        (.sint16, -2, [0xFB, 0xFF], "-0.05"),
        (.sint16, -2, [0x00, 0x80], "-327.68"),
        (.sint16, -6, [1, 0], "0.000001"),
        (.sint16, -7, [1, 0], "1e-7"),
        (.sint16, -7, [0xF1, 0xFF], "-0.0000015"),
        (.sint16, -8, [0xF1, 0xFF], "-1.5e-7"),
        (.sint32, 19, [1, 0, 0, 0], "10000000000000000000"),
        (.sint32, 20, [25, 0, 0, 0], "2.5e21"),
        (.uint32, 127, [0xFF, 0xFF, 0xFF, 0xFF], "4.294967295e136"),
        // float32: the shortest decimal that reads back as the same Float.
        (.float32, 0, [0x00, 0x00, 0x40, 0x3F], "0.75"),
        (.float32, 0, [0x01, 0x00, 0x40, 0x3F], "0.75000006"),
        (.float32, 0, [0xCD, 0xCC, 0xCC, 0x3D], "0.1"),
        (.float32, 0, [0x00, 0x00, 0xAC, 0x41], "21.5"),
        (.float32, 0, [0x00, 0x00, 0x80, 0x4B], "16777216"),
        (.float32, 0, [0x95, 0xBF, 0xD6, 0x33], "1e-7"),
        (.float32, 0, [0xFF, 0xFF, 0x7F, 0x7F], "3.4028235e38"),
        (.float32, 0, [0x01, 0x00, 0x00, 0x00], "1e-45"),
        (.float32, 0, [0x00, 0x00, 0x00, 0x80], "0"),
        (.float32, 0, [0x00, 0x00, 0xC0, 0x7F], "null"),
        (.float32, 0, [0x00, 0x00, 0x80, 0x7F], "null"),
        (.float32, 0, [0x00, 0x00, 0x80, 0xFF], "null"),
        // float64: the shortest decimal that reads back as the same Double.
        (.float64, 0, [0x9A, 0x99, 0x99, 0x99, 0x99, 0x99, 0xB9, 0x3F], "0.1"),
        (.float64, 0, [0x00, 0x00, 0x00, 0xA0, 0x99, 0x99, 0xB9, 0x3F], "0.10000000149011612"),
        (.float64, 0, [0xC9, 0x76, 0xBE, 0x9F, 0x0C, 0x24, 0xFE, 0x40], "123456.789"),
        (.float64, 0, [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x43], "9007199254740992"),
        (.float64, 0, [0x40, 0x8C, 0xB5, 0x78, 0x1D, 0xAF, 0x15, 0x44], "100000000000000000000"),
        (.float64, 0, [0x50, 0xEF, 0xE2, 0xD6, 0xE4, 0x1A, 0x4B, 0x44], "1e21"),
        (.float64, 0, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xEF, 0x7F], "1.7976931348623157e308"),
        (.float64, 0, [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00], "5e-324"),
        (.float64, 0, [0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x7F], "null"),
        // SFLOAT and FLOAT (IEEE 11073): mantissa × 10^exponent, as the bytes carry it.
        (.medfloat16, 0, [0x6E, 0xF1], "36.6"),
        (.medfloat16, 0, [0x68, 0xF1], "36"),
        (.medfloat16, 0, [0xFD, 0x77], "20450000000"),
        (.medfloat16, 0, [0xFF, 0x8F], "-1e-8"),
        (.medfloat16, 0, [0xFF, 0x07], "null"),
        (.medfloat16, 0, [0x00, 0x08], "null"),
        (.medfloat16, 0, [0x01, 0x08], "null"),
        (.medfloat16, 0, [0xFE, 0x07], "null"),
        (.medfloat16, 0, [0x02, 0x08], "null"),
        (.medfloat32, 0, [0x6E, 0x01, 0x00, 0xFF], "36.6"),
        (.medfloat32, 0, [0xFD, 0xFF, 0x7F, 0x7F], "8.388605e133"),
        (.medfloat32, 0, [0x01, 0x00, 0x00, 0x80], "1e-128"),
        (.medfloat32, 0, [0xFF, 0xFF, 0x7F, 0x00], "null"),
        // Not numbers; bytes that do not decode are shown as they are.
        (.bool, 0, [1], "true"),
        (.bool, 0, [0], "false"),
        (.utf8, 0, Array("a \"b\"\n".utf8), #""a \"b\"\n""#),
        (.bytes, 0, [0x0A, 0xFF], #""0aff""#),
        (.sint16, -2, [1, 2, 3], #""010203""#),
        (.utf8, 0, [0xFF], #""ff""#)
    ])
    func literal(format: ValueFormat, exponent: Int8, bytes: [UInt8], json: String) throws {
        let encoding = try ValueEncoding(format, exponent: exponent)
        #expect(ValueJSON.literal(bytes, encoding: encoding) == json)
    }

    @Test(arguments: [
        ("21.5", SensorValue.number(21.5), [UInt8]([0x66, 0x08])),
        ("{\"value\": -3}", .number(-3), [0xD4, 0xFE]),
        ("{\"value\": 1, \"ts\": \"2023-11-14T22:13:20Z\"}", .number(1), [0x64, 0x00])
    ])
    func acceptsNumbers(payload: String, value: SensorValue, bytes: [UInt8]) throws {
        let encoding = EnvironmentalSensingCharacteristic.temperature.encoding
        let parsed = try ValueJSON.parseSet(Array(payload.utf8), encoding: encoding)
        #expect(parsed.value == value)
        #expect(parsed.bytes == bytes)
    }

    @Test func acceptsEachKind() throws {
        #expect(try ValueJSON.parseSet(Array("true".utf8), encoding: ValueEncoding(.bool)).bytes == [1])
        #expect(try ValueJSON.parseSet(Array("{\"value\":false}".utf8), encoding: ValueEncoding(.bool)).bytes == [0])
        #expect(try ValueJSON.parseSet(Array("\"hi\"".utf8), encoding: ValueEncoding(.utf8)).bytes == [0x68, 0x69])
        #expect(try ValueJSON.parseSet(Array("\"0a0b\"".utf8), encoding: ValueEncoding(.bytes)).bytes == [10, 11])
        #expect(try ValueJSON.parseSet(Array("[1, 2, 255]".utf8), encoding: ValueEncoding(.bytes)).bytes == [1, 2, 255])
        #expect(try ValueJSON.parseSet(Array("36.4".utf8), encoding: ValueEncoding(.medfloat16)).bytes == [0x6C, 0xF1])
    }

    /// Every kind of bad payload is refused with the reason; nothing is half-applied.
    @Test(arguments: [
        ("\"warm\"", ValueFormat.sint16, ValueError.wrongType(expected: .sint16, got: "a string")),
        ("true", .sint16, .wrongType(expected: .sint16, got: "a boolean")),
        ("1", .bool, .wrongType(expected: .bool, got: "a number")),
        ("null", .uint8, .wrongType(expected: .uint8, got: "null")),
        ("{\"value\": [1]}", .uint8, .wrongType(expected: .uint8, got: "an array")),
        ("300", .uint8, .outOfRange(value: 300, format: .uint8, range: 0...255)),
        ("-1", .uint8, .outOfRange(value: -1, format: .uint8, range: 0...255)),
        ("{\"val\": 3}", .uint8, .invalidJSON("object without a \"value\" key")),
        ("\"abcdefghi\"", .utf8, .tooLong(length: 9, maximum: 8)),
        ("[1, 256]", .bytes, .wrongType(expected: .bytes, got: "an array holding a number 256.0")),
        ("\"xyz\"", .bytes, .wrongType(expected: .bytes, got: "a string that is not hex"))
    ])
    func rejectsBadPayloads(payload: String, format: ValueFormat, error: ValueError) throws {
        let encoding = try ValueEncoding(format, maximumLength: 8)
        #expect(throws: error) { try ValueJSON.parseSet(Array(payload.utf8), encoding: encoding) }
    }

    @Test func rejectsInvalidJSONAndNonUTF8() throws {
        let encoding = try ValueEncoding(.uint8)
        for payload in ["{", "21.5.3", "", "{\"value\": }", "tru"] {
            let error = #expect(throws: ValueError.self) { try ValueJSON.parseSet(Array(payload.utf8), encoding: encoding) }
            guard case .invalidJSON = error else {
                Issue.record("\(payload): expected invalid JSON, got \(String(describing: error))")
                continue
            }
        }
        #expect(throws: ValueError.invalidUTF8) { try ValueJSON.parseSet([0x22, 0xC3, 0x28, 0x22], encoding: encoding) }
        let huge = [UInt8](repeating: 0x20, count: ValueJSON.maximumPayloadLength + 1)
        #expect(throws: ValueError.tooLong(length: huge.count, maximum: ValueJSON.maximumPayloadLength)) {
            try ValueJSON.parseSet(huge, encoding: encoding)
        }
    }
}
