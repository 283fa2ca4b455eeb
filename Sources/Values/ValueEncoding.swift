import BluetoothCore

/// Why a value cannot be encoded, decoded or accepted. `description` is the message a user sees
/// (in a log line, on MQTT's error topic).
public enum ValueError: Error, Equatable, Sendable, CustomStringConvertible {
    case wrongType(expected: ValueFormat, got: String)
    case outOfRange(value: Double, format: ValueFormat, range: ClosedRange<Double>)
    case notFinite(format: ValueFormat)
    case tooLong(length: Int, maximum: Int)
    case wrongLength(format: ValueFormat, expected: Int, got: Int)
    case invalidUTF8
    case invalidJSON(String)
    case exponentNotAllowed(format: ValueFormat)
    case invalidMaximumLength(Int)
    /// A BTHome button object's value that is no button event.
    case notAButtonEvent(SensorValue)

    public var description: String {
        switch self {
        case .wrongType(let expected, let got):
            "wrong type: a \(expected.rawValue) characteristic needs \(Self.expectation(expected)), got \(got)"
        case .outOfRange(let value, let format, let range):
            "out of range: \(Self.number(value)) does not fit \(format.rawValue) "
                + "(\(Self.number(range.lowerBound))...\(Self.number(range.upperBound)))"
        case .notFinite(let format):
            "out of range: \(format.rawValue) cannot carry NaN or infinity"
        case .tooLong(let length, let maximum):
            "too long: \(length) bytes, the characteristic holds at most \(maximum)"
        case .wrongLength(let format, let expected, let got):
            "wrong length: \(format.rawValue) is \(expected) bytes, got \(got)"
        case .invalidUTF8:
            "not valid UTF-8"
        case .invalidJSON(let reason):
            "invalid JSON: \(reason)"
        case .exponentNotAllowed(let format):
            "a decimal exponent only applies to integer formats, not \(format.rawValue)"
        case .invalidMaximumLength(let length):
            "maximum length \(length) is outside 1...512 (ATT's attribute value limit)"
        case .notAButtonEvent(let value):
            "not a BTHome button event: \(value) (events are 0-6, 128 and 129)"
        }
    }

    /// Numbers as people write them: 255, not 255.0.
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    private static func expectation(_ format: ValueFormat) -> String {
        switch format {
        case .bool: "true or false"
        case .utf8: "a string"
        case .bytes: "a hex string or an array of bytes"
        default: "a number"
        }
    }
}

/// A characteristic's value format plus the Presentation Format model's decimal exponent:
/// on air an integer `raw`, meaning `raw × 10^exponent` (Core Vol 3 Part G 3.3.3.5.3). So
/// Temperature (sint16, exponent -2) carries 25.06 °C as 2506.
public struct ValueEncoding: Sendable, Hashable {
    /// ATT's limit on an attribute value (Core Vol 3 Part F 3.2.9).
    public static let attributeValueLimit = 512

    public let format: ValueFormat
    public let exponent: Int8
    /// Longest value accepted for `utf8` and `bytes`; the fixed length for the other formats.
    public let maximumLength: Int

    public init(
        _ format: ValueFormat, exponent: Int8 = 0,
        maximumLength: Int = ValueEncoding.attributeValueLimit
    ) throws(ValueError) {
        guard exponent == 0 || format.integerRange != nil else {
            throw .exponentNotAllowed(format: format)
        }
        guard (1...Self.attributeValueLimit).contains(maximumLength) else {
            throw .invalidMaximumLength(maximumLength)
        }
        self.format = format
        self.exponent = exponent
        self.maximumLength = format.fixedLength ?? maximumLength
    }

    /// For tables of SIG-defined integer encodings, which need no validation.
    init(integer format: ValueFormat, exponent: Int8) {
        precondition(format.integerRange != nil, "\(format) is not an integer format")
        self.format = format
        self.exponent = exponent
        self.maximumLength = format.fixedLength ?? Self.attributeValueLimit
    }

    /// The physical values an integer format can carry, e.g. -327.68...327.67 for sint16 at -2.
    public var numericRange: ClosedRange<Double>? {
        guard let range = format.integerRange else { return nil }
        return scaled(range.lowerBound)...scaled(range.upperBound)
    }

    /// An integer format's raw value as the decimal it stands for, as JSON prints it
    /// (`-32768` at exponent -2 is `-327.68`).
    public func decimalText(raw: Int64) -> String {
        DecimalNumber(significand: raw, exponent: Int(exponent)).description
    }

    /// A boolean's two encodings, made once and shared by every value that takes them: a line
    /// toggling sends a notification per edge, and an array per edge would be a heap allocation
    /// (and its release) each time.
    private static let trueBytes: [UInt8] = [1]
    private static let falseBytes: [UInt8] = [0]

    public func encode(_ value: SensorValue) throws(ValueError) -> [UInt8] {
        switch (format, value) {
        case (.bool, .bool(let flag)):
            return flag ? Self.trueBytes : Self.falseBytes
        case (.utf8, .text(let text)):
            return try limited(Array(text.utf8))
        case (.bytes, .bytes(let bytes)):
            return try limited(bytes)
        case (.float32, .number(let number)):
            let single = Float(number)
            if number.isFinite && single.isInfinite {
                throw .outOfRange(
                    value: number, format: format,
                    range: -Double(Float.greatestFiniteMagnitude)...Double(Float.greatestFiniteMagnitude))
            }
            return littleEndian(UInt64(single.bitPattern), count: 4)
        case (.float64, .number(let number)):
            return littleEndian(number.bitPattern, count: 8)
        case (.medfloat16, .number(let number)):
            return MedFloat16(number).bytes
        case (.medfloat32, .number(let number)):
            return MedFloat32(number).bytes
        case (_, .number(let number)) where format.integerRange != nil:
            return try encodeInteger(number)
        default:
            throw .wrongType(expected: format, got: value.kindName)
        }
    }

    public func decode(_ bytes: [UInt8]) throws(ValueError) -> SensorValue {
        if let length = format.fixedLength, bytes.count != length {
            throw .wrongLength(format: format, expected: length, got: bytes.count)
        }
        switch format {
        case .bool:
            return .bool(bytes[0] != 0)
        case .utf8:
            guard bytes.count <= maximumLength else { throw .tooLong(length: bytes.count, maximum: maximumLength) }
            guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
            return .text(text)
        case .bytes:
            guard bytes.count <= maximumLength else { throw .tooLong(length: bytes.count, maximum: maximumLength) }
            return .bytes(bytes)
        case .float32:
            return .number(Double(Float(bitPattern: UInt32(truncatingIfNeeded: unsigned(bytes)))))
        case .float64:
            return .number(Double(bitPattern: unsigned(bytes)))
        case .medfloat16:
            return .number(MedFloat16(bitPattern: UInt16(truncatingIfNeeded: unsigned(bytes))).doubleValue)
        case .medfloat32:
            return .number(MedFloat32(bitPattern: UInt32(truncatingIfNeeded: unsigned(bytes))).doubleValue)
        case .uint8, .uint16, .uint24, .uint32, .sint8, .sint16, .sint32:
            return .number(scaled(rawInteger(bytes)))
        }
    }

    /// The number `bytes` carry as the decimal they stand for, for `ValueJSON.literal`: an
    /// integer format's raw × 10^exponent and an IEEE 11073 float's mantissa × 10^exponent
    /// exactly, a float32 or float64 as the shortest decimal that reads back as the same Float or
    /// Double. nil for NaN, infinities, 11073's reserved values and formats that are not numbers.
    /// `bytes` must have the format's length (`decode` checks it).
    func decimal(_ bytes: [UInt8]) -> DecimalNumber? {
        switch format {
        case .float32: DecimalNumber(shortest: Float(bitPattern: UInt32(truncatingIfNeeded: unsigned(bytes))))
        case .float64: DecimalNumber(shortest: Double(bitPattern: unsigned(bytes)))
        case .medfloat16: MedFloat16(bitPattern: UInt16(truncatingIfNeeded: unsigned(bytes))).decimal
        case .medfloat32: MedFloat32(bitPattern: UInt32(truncatingIfNeeded: unsigned(bytes))).decimal
        case .uint8, .uint16, .uint24, .uint32, .sint8, .sint16, .sint32:
            DecimalNumber(significand: rawInteger(bytes), exponent: Int(exponent))
        case .bool, .utf8, .bytes: nil
        }
    }

    /// An integer format's raw integer, before the decimal exponent: two's complement for sint.
    private func rawInteger(_ bytes: [UInt8]) -> Int64 {
        let raw = Int64(unsigned(bytes))
        switch format {
        case .sint8, .sint16, .sint32:
            let bitCount = 8 * bytes.count
            return raw >= (1 << (bitCount - 1)) ? raw - (1 << bitCount) : raw
        default:
            return raw
        }
    }

    private func encodeInteger(_ number: Double) throws(ValueError) -> [UInt8] {
        guard number.isFinite, let range = format.integerRange, let length = format.fixedLength else {
            throw .notFinite(format: format)
        }
        let power = decimalPower(abs(Int(exponent)))
        let raw = (exponent < 0 ? number * power : number / power).rounded(.toNearestOrAwayFromZero)
        guard raw >= Double(range.lowerBound), raw <= Double(range.upperBound) else {
            throw .outOfRange(value: number, format: format, range: numericRange ?? 0...0)
        }
        return littleEndian(UInt64(bitPattern: Int64(raw)), count: length)
    }

    private func scaled(_ raw: Int64) -> Double {
        let power = decimalPower(abs(Int(exponent)))
        return exponent < 0 ? Double(raw) / power : Double(raw) * power
    }

    private func limited(_ bytes: [UInt8]) throws(ValueError) -> [UInt8] {
        guard bytes.count <= maximumLength else { throw .tooLong(length: bytes.count, maximum: maximumLength) }
        return bytes
    }
}

/// `value`'s low `count` bytes (1, 2, 3, 4 or 8), little-endian.
func littleEndian(_ value: UInt64, count: Int) -> [UInt8] {
    var writer = ByteWriter(capacity: count)
    switch count {
    case 1: writer.write(UInt8(truncatingIfNeeded: value))
    case 2: writer.write(UInt16(truncatingIfNeeded: value))
    case 3: writer.writeUInt24(UInt32(truncatingIfNeeded: value))
    case 4: writer.write(UInt32(truncatingIfNeeded: value))
    default: writer.write(value)
    }
    return writer.bytes
}

/// The unsigned integer in 1, 2, 3, 4 or 8 little-endian bytes (callers check the length).
private func unsigned(_ bytes: [UInt8]) -> UInt64 {
    var reader = ByteReader(bytes)
    let value: UInt64? =
        switch bytes.count {
        case 1: (try? reader.readUInt8()).map(UInt64.init)
        case 2: (try? reader.readUInt16()).map(UInt64.init)
        case 3: (try? reader.readUInt24()).map(UInt64.init)
        case 4: (try? reader.readUInt32()).map(UInt64.init)
        default: try? reader.readUInt64()
        }
    return value ?? 0
}
