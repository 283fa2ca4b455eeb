import Testing

@testable import Values

struct ValueEncodingTests {
    @Test(arguments: [
        (ValueFormat.bool, Int8(0), SensorValue.bool(true), [UInt8]([0x01])),
        (.bool, 0, .bool(false), [0x00]),
        (.uint8, 0, .number(200), [0xC8]),
        (.uint16, 0, .number(0x1234), [0x34, 0x12]),
        (.uint24, 0, .number(0x12_3456), [0x56, 0x34, 0x12]),
        (.uint32, 0, .number(0x1234_5678), [0x78, 0x56, 0x34, 0x12]),
        (.sint8, 0, .number(-2), [0xFE]),
        (.sint16, 0, .number(-2), [0xFE, 0xFF]),
        (.sint32, 0, .number(-2), [0xFE, 0xFF, 0xFF, 0xFF]),
        (.float32, 0, .number(1.5), [0x00, 0x00, 0xC0, 0x3F]),
        (.float64, 0, .number(1.5), [0, 0, 0, 0, 0, 0, 0xF8, 0x3F]),
        (.medfloat16, 0, .number(36.4), [0x6C, 0xF1]),
        (.medfloat32, 0, .number(36.4), [0xC0, 0x8A, 0x37, 0xFB]),
        (.utf8, 0, .text("héllo"), [0x68, 0xC3, 0xA9, 0x6C, 0x6C, 0x6F]),
        (.bytes, 0, .bytes([1, 2, 3]), [1, 2, 3]),
        // Fixed point: raw × 10^exponent.
        (.sint16, -2, .number(25.06), [0xCA, 0x09]),
        (.sint16, -2, .number(-10.5), [0xE6, 0xFB]),
        (.uint16, -2, .number(50.55), [0xBF, 0x13]),
        (.uint32, -1, .number(101_325.0), [0x02, 0x76, 0x0F, 0x00]),
        (.uint8, 1, .number(250), [0x19])
    ])
    func encodesAndDecodes(format: ValueFormat, exponent: Int8, value: SensorValue, bytes: [UInt8]) throws {
        let encoding = try ValueEncoding(format, exponent: exponent)
        #expect(try encoding.encode(value) == bytes)
        #expect(try encoding.decode(bytes) == value)
    }

    @Test func fixedPointRoundsToTheResolution() throws {
        let temperature = try ValueEncoding(.sint16, exponent: -2)
        #expect(try temperature.encode(.number(25.0649)) == [0xCA, 0x09])
        #expect(try temperature.encode(.number(25.066)) == [0xCB, 0x09])
        #expect(temperature.numericRange == -327.68...327.67)
    }

    @Test func outOfRangeIsAnError() throws {
        let temperature = try ValueEncoding(.sint16, exponent: -2)
        #expect(throws: ValueError.outOfRange(value: 400, format: .sint16, range: -327.68...327.67)) {
            try temperature.encode(.number(400))
        }
        #expect(throws: ValueError.outOfRange(value: -1, format: .uint8, range: 0...255)) {
            try ValueEncoding(.uint8).encode(.number(-1))
        }
        #expect(throws: ValueError.notFinite(format: .uint16)) {
            try ValueEncoding(.uint16).encode(.number(.nan))
        }
        #expect(throws: ValueError.self) { try ValueEncoding(.float32).encode(.number(1e39)) }
    }

    /// A boolean's bytes are one shared array per value, not an array (a heap allocation) made
    /// for every edge of a line; the values stay apart.
    @Test func booleansShareTheirEncodings() throws {
        let encoding = try ValueEncoding(.bool)
        let first = try encoding.encode(.bool(true))
        let second = try encoding.encode(.bool(true))
        let other = try encoding.encode(.bool(false))
        #expect(first.withUnsafeBufferPointer(\.baseAddress) == second.withUnsafeBufferPointer(\.baseAddress))
        #expect(other.withUnsafeBufferPointer(\.baseAddress) != first.withUnsafeBufferPointer(\.baseAddress))
        #expect((first, other) == ([0x01], [0x00]))
    }

    @Test func wrongTypesAndLengths() throws {
        #expect(throws: ValueError.wrongType(expected: .uint8, got: "a boolean")) {
            try ValueEncoding(.uint8).encode(.bool(true))
        }
        #expect(throws: ValueError.wrongType(expected: .bool, got: "a number")) {
            try ValueEncoding(.bool).encode(.number(1))
        }
        #expect(throws: ValueError.wrongLength(format: .sint16, expected: 2, got: 3)) {
            try ValueEncoding(.sint16).decode([1, 2, 3])
        }
        #expect(throws: ValueError.invalidUTF8) { try ValueEncoding(.utf8).decode([0xFF, 0xFE]) }
        let short = try ValueEncoding(.utf8, maximumLength: 4)
        #expect(throws: ValueError.tooLong(length: 5, maximum: 4)) { try short.encode(.text("hello")) }
        #expect(throws: ValueError.exponentNotAllowed(format: .float32)) {
            try ValueEncoding(.float32, exponent: -1)
        }
        #expect(throws: ValueError.invalidMaximumLength(513)) { try ValueEncoding(.bytes, maximumLength: 513) }
    }

    @Test func configurationNames() {
        #expect(ValueFormat(name: "SFLOAT") == .medfloat16)
        #expect(ValueFormat(name: "float11073") == .medfloat32)
        #expect(ValueFormat(name: "sint16") == .sint16)
        #expect(ValueFormat(name: "int16") == nil)
    }

    /// Messages say what is wrong in words a user can act on.
    @Test func errorMessages() {
        #expect(
            ValueError.wrongType(expected: .sint16, got: "a string").description
                == "wrong type: a sint16 characteristic needs a number, got a string")
        #expect(
            ValueError.tooLong(length: 600, maximum: 512).description
                == "too long: 600 bytes, the characteristic holds at most 512")
        #expect(
            ValueError.outOfRange(value: 300, format: .uint8, range: 0...255).description
                == "out of range: 300 does not fit uint8 (0...255)")
        #expect(
            ValueError.outOfRange(value: 400, format: .sint16, range: -327.68...327.67).description
                == "out of range: 400 does not fit sint16 (-327.68...327.67)")
    }
}
