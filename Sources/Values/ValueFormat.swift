import BluetoothCore

/// How a characteristic's value is laid out on air; every multi-byte form is little-endian.
/// Raw values are the names used in configuration; `presentationFormatCode` is the SIG code the
/// Presentation Format descriptor carries (Assigned Numbers, "Formats").
public enum ValueFormat: String, Sendable, Hashable, CaseIterable {
    case bool
    case uint8, uint16, uint24, uint32
    case sint8, sint16, sint32
    case float32, float64
    /// IEEE 11073-20601 SFLOAT.
    case medfloat16
    /// IEEE 11073-20601 FLOAT.
    case medfloat32
    case utf8
    /// Opaque bytes (SIG "struct").
    case bytes

    /// Accepts the configuration name or the IEEE names "sfloat" / "float11073"
    /// (case-insensitive); nil for anything else.
    public init?(name: String) {
        let lowered = name.lowercased()
        switch lowered {
        case "sfloat": self = .medfloat16
        case "float11073": self = .medfloat32
        default: self.init(rawValue: lowered)
        }
    }

    public var presentationFormatCode: UInt8 {
        switch self {
        case .bool: 0x01
        case .uint8: 0x04
        case .uint16: 0x06
        case .uint24: 0x07
        case .uint32: 0x08
        case .sint8: 0x0C
        case .sint16: 0x0E
        case .sint32: 0x10
        case .float32: 0x14
        case .float64: 0x15
        case .medfloat16: 0x16
        case .medfloat32: 0x17
        case .utf8: 0x19
        case .bytes: 0x1B
        }
    }

    /// Bytes on air for fixed-size formats; nil for `utf8` and `bytes`.
    public var fixedLength: Int? {
        switch self {
        case .bool, .uint8, .sint8: 1
        case .uint16, .sint16, .medfloat16: 2
        case .uint24: 3
        case .uint32, .sint32, .float32, .medfloat32: 4
        case .float64: 8
        case .utf8, .bytes: nil
        }
    }

    /// The raw integer range of integer formats (before the decimal exponent); nil otherwise.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .uint8: 0...Int64(UInt8.max)
        case .uint16: 0...Int64(UInt16.max)
        case .uint24: 0...0xFF_FFFF
        case .uint32: 0...Int64(UInt32.max)
        case .sint8: Int64(Int8.min)...Int64(Int8.max)
        case .sint16: Int64(Int16.min)...Int64(Int16.max)
        case .sint32: Int64(Int32.min)...Int64(Int32.max)
        default: nil
        }
    }

    /// Whether values are numbers (what delta thresholds and trigger comparisons need).
    public var isNumeric: Bool {
        switch self {
        case .bool, .utf8, .bytes: false
        default: true
        }
    }
}

/// A value as gattway handles it before encoding: what a sensor read, what MQTT asked for.
public enum SensorValue: Sendable, Hashable, CustomStringConvertible {
    case bool(Bool)
    case number(Double)
    case text(String)
    case bytes([UInt8])

    /// The value as a number for thresholds and comparisons: booleans count as 0 and 1.
    public var numericValue: Double? {
        switch self {
        case .bool(let flag): flag ? 1 : 0
        case .number(let number): number
        case .text, .bytes: nil
        }
    }

    /// The kind named in error messages ("got a number").
    public var kindName: String {
        switch self {
        case .bool: "a boolean"
        case .number: "a number"
        case .text: "a string"
        case .bytes: "bytes"
        }
    }

    public var description: String {
        switch self {
        case .bool(let flag): "\(flag)"
        case .number(let number): "\(number)"
        case .text(let text): "\"\(text)\""
        case .bytes(let bytes): "0x\(bytes.hexString)"
        }
    }
}
