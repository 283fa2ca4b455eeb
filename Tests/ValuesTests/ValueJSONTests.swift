import Foundation
import Testing
@testable import Values

struct ValueJSONTests {
    let moment = Date(timeIntervalSince1970: 1_700_000_000.125)

    @Test(arguments: [
        (SensorValue.number(25.06), "{\"value\":25.06,\"ts\":\"2023-11-14T22:13:20.125Z\"}"),
        (.number(42), "{\"value\":42,\"ts\":\"2023-11-14T22:13:20.125Z\"}"),
        (.number(-0.5), "{\"value\":-0.5,\"ts\":\"2023-11-14T22:13:20.125Z\"}"),
        (.number(.nan), "{\"value\":null,\"ts\":\"2023-11-14T22:13:20.125Z\"}"),
        (.bool(true), "{\"value\":true,\"ts\":\"2023-11-14T22:13:20.125Z\"}"),
        (.text("a \"b\"\n"), "{\"value\":\"a \\\"b\\\"\\n\",\"ts\":\"2023-11-14T22:13:20.125Z\"}"),
        (.bytes([0x0A, 0xFF]), "{\"value\":\"0aff\",\"ts\":\"2023-11-14T22:13:20.125Z\"}")
    ])
    func statePayload(value: SensorValue, json: String) {
        #expect(ValueJSON.statePayload(value, timestamp: moment) == json)
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
