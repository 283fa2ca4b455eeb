import BluetoothCore

/// The application error codes the Environmental Sensing Service defines for descriptor writes.
public enum ESSErrorCode: UInt8, Sendable, Hashable {
    /// 0x80: the value written is malformed or not acceptable.
    case writeRequestRejected = 0x80
    /// 0x81: the trigger condition is RFU or not supported by this server.
    case conditionNotSupported = 0x81
}

/// A refused write to an ES descriptor: the ATT error code to answer with and why (for the log).
public struct ESSWriteRejection: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: ESSErrorCode
    public let reason: String

    public init(_ code: ESSErrorCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String {
        "ATT error 0x\(String(code.rawValue, radix: 16)): \(reason)"
    }
}

/// Trigger conditions of the ES Trigger Setting descriptor (ESS 3.1.2.3, Table 3.4).
public enum TriggerCondition: UInt8, Sendable, Hashable, CaseIterable {
    case inactive = 0x00
    case fixedTimeInterval = 0x01
    case noLessThanTimeInterval = 0x02
    case valueChanged = 0x03
    case lessThan = 0x04
    case lessThanOrEqual = 0x05
    case greaterThan = 0x06
    case greaterThanOrEqual = 0x07
    case equal = 0x08
    case notEqual = 0x09
}

/// How a value compares against a trigger's reference (conditions 0x04...0x09).
public enum ValueComparison: Sendable, Hashable {
    case lessThan, lessThanOrEqual, greaterThan, greaterThanOrEqual, equal, notEqual

    public var condition: TriggerCondition {
        switch self {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqual
        case .greaterThan: .greaterThan
        case .greaterThanOrEqual: .greaterThanOrEqual
        case .equal: .equal
        case .notEqual: .notEqual
        }
    }

    /// Whether the comparison needs an order (numbers) rather than just equality.
    public var isOrdering: Bool {
        switch self {
        case .equal, .notEqual: false
        default: true
        }
    }

    /// Numbers compare by value; other values (text, bytes) only by equality of their encoding.
    public func holds(_ value: SensorValue, reference: SensorValue) -> Bool {
        if let number = value.numericValue, let target = reference.numericValue {
            switch self {
            case .lessThan: return number < target
            case .lessThanOrEqual: return number <= target
            case .greaterThan: return number > target
            case .greaterThanOrEqual: return number >= target
            case .equal: return number == target
            case .notEqual: return number != target
            }
        }
        switch self {
        case .equal: return value == reference
        case .notEqual: return value != reference
        default: return false
        }
    }
}

/// One ES Trigger Setting descriptor value (0x290D, ESS 3.1.2.3): a condition byte and an operand
/// — none (inactive, value changed), a uint24 number of seconds (time conditions), or a value in
/// the characteristic's own format (comparisons).
public enum ESTriggerSetting: Sendable, Hashable {
    case inactive
    case fixedTimeInterval(seconds: UInt32)
    case noLessThanTimeInterval(seconds: UInt32)
    case valueChanged
    case compare(ValueComparison, reference: SensorValue)

    public static let descriptorUUID = BluetoothUUID(0x290D)

    public var condition: TriggerCondition {
        switch self {
        case .inactive: .inactive
        case .fixedTimeInterval: .fixedTimeInterval
        case .noLessThanTimeInterval: .noLessThanTimeInterval
        case .valueChanged: .valueChanged
        case .compare(let comparison, _): comparison.condition
        }
    }

    /// Parses a central's write to the descriptor of a characteristic encoded with `encoding`.
    /// RFU or unsupported conditions get 0x81; a wrong length, a zero interval or a reference
    /// that is not a value of the characteristic's format get 0x80.
    public init(
        descriptorValue bytes: [UInt8], encoding: ValueEncoding,
        supported: Set<TriggerCondition> = Set(TriggerCondition.allCases)
    ) throws(ESSWriteRejection) {
        guard let conditionByte = bytes.first else {
            throw ESSWriteRejection(.writeRequestRejected, "empty ES Trigger Setting")
        }
        guard let condition = TriggerCondition(rawValue: conditionByte) else {
            throw ESSWriteRejection(
                .conditionNotSupported,
                "condition 0x\(String(conditionByte, radix: 16)) is reserved for future use")
        }
        guard supported.contains(condition) else {
            throw ESSWriteRejection(.conditionNotSupported, "condition \(condition) is not supported here")
        }
        let operand = Array(bytes.dropFirst())
        switch condition {
        case .inactive, .valueChanged:
            guard operand.isEmpty else {
                throw ESSWriteRejection(.writeRequestRejected, "condition \(condition) takes no operand, got \(operand.count) bytes")
            }
            self = condition == .inactive ? .inactive : .valueChanged
        case .fixedTimeInterval, .noLessThanTimeInterval:
            guard operand.count == 3 else {
                throw ESSWriteRejection(.writeRequestRejected, "condition \(condition) takes a 3-byte interval, got \(operand.count) bytes")
            }
            let seconds = UInt32(operand[0]) | UInt32(operand[1]) << 8 | UInt32(operand[2]) << 16
            guard seconds > 0 else {
                throw ESSWriteRejection(.writeRequestRejected, "a time interval of 0 seconds is not a trigger")
            }
            self =
                condition == .fixedTimeInterval
                ? .fixedTimeInterval(seconds: seconds) : .noLessThanTimeInterval(seconds: seconds)
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .equal, .notEqual:
            let comparison = Self.comparison(condition)
            if comparison.isOrdering && !encoding.format.isNumeric {
                throw ESSWriteRejection(
                    .conditionNotSupported,
                    "condition \(condition) needs a numeric characteristic, this one is \(encoding.format.rawValue)")
            }
            let reference: SensorValue
            do {
                reference = try encoding.decode(operand)
            } catch {
                throw ESSWriteRejection(.writeRequestRejected, "reference value: \(error)")
            }
            if case .number(let number) = reference, number.isNaN {
                throw ESSWriteRejection(.writeRequestRejected, "reference value is not a number")
            }
            self = .compare(comparison, reference: reference)
        }
    }

    /// The descriptor value, for reads; `encoding` is the characteristic's.
    public func bytes(encoding: ValueEncoding) -> [UInt8] {
        switch self {
        case .inactive, .valueChanged:
            return [condition.rawValue]
        case .fixedTimeInterval(let seconds), .noLessThanTimeInterval(let seconds):
            var writer = ByteWriter(capacity: 4)
            writer.write(condition.rawValue)
            writer.writeUInt24(seconds)
            return writer.bytes
        case .compare(_, let reference):
            // The reference was decoded from (or checked against) this encoding, so it encodes back.
            return [condition.rawValue] + ((try? encoding.encode(reference)) ?? [])
        }
    }

    private static func comparison(_ condition: TriggerCondition) -> ValueComparison {
        switch condition {
        case .lessThan: .lessThan
        case .lessThanOrEqual: .lessThanOrEqual
        case .greaterThan: .greaterThan
        case .greaterThanOrEqual: .greaterThanOrEqual
        case .equal: .equal
        default: .notEqual
        }
    }
}

/// The ES Configuration descriptor (0x290B, ESS 3.1.2.4): how several trigger settings on one
/// characteristic combine.
public enum TriggerLogic: UInt8, Sendable, Hashable {
    case and = 0x00
    case or = 0x01

    public static let descriptorUUID = BluetoothUUID(0x290B)

    /// Parses a central's write: one byte, 0x00 (AND) or 0x01 (OR); anything else gets 0x80.
    public init(descriptorValue bytes: [UInt8]) throws(ESSWriteRejection) {
        guard bytes.count == 1 else {
            throw ESSWriteRejection(.writeRequestRejected, "ES Configuration is 1 byte, got \(bytes.count)")
        }
        guard let logic = TriggerLogic(rawValue: bytes[0]) else {
            throw ESSWriteRejection(
                .writeRequestRejected,
                "trigger logic 0x\(String(bytes[0], radix: 16)) is reserved for future use")
        }
        self = logic
    }

    public var bytes: [UInt8] { [rawValue] }
}
