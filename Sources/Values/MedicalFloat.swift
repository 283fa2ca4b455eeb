import FoundationEssentials
import Glibc

/// The reserved values of the IEEE 11073-20601 decimal floats. Each is a fixed mantissa with
/// exponent 0; they stand for states, not numbers.
public enum MedicalFloatSpecial: Sendable, Hashable, CaseIterable {
    /// Not a Number: no valid value (sensor fault, not measured yet).
    case nan
    /// Not at this Resolution: a value exists but cannot be told at this resolution.
    case notAtThisResolution
    case positiveInfinity
    case negativeInfinity
    /// Reserved for future use by IEEE 11073; decoded so it is never mistaken for a number.
    case reservedForFutureUse
}

/// An IEEE 11073-20601 decimal float: value = mantissa × 10^exponent, both two's complement,
/// the exponent in the top bits. Bluetooth carries two sizes: SFLOAT (`MedFloat16`, 4-bit
/// exponent, 12-bit mantissa; SIG format "medfloat16") and FLOAT (`MedFloat32`, 8-bit exponent,
/// 24-bit mantissa; "medfloat32").
public protocol MedicalFloat: Sendable, Hashable, CustomStringConvertible {
    static var mantissaBitCount: Int { get }
    static var exponentBitCount: Int { get }
    /// The whole value as an unsigned integer, as it goes on air (little-endian).
    var bits: UInt32 { get }
    init(uncheckedBits: UInt32)
}

/// Why a mantissa/exponent pair cannot be a `MedicalFloat`.
public enum MedicalFloatError: Error, Equatable, Sendable, CustomStringConvertible {
    case mantissaOutOfRange(mantissa: Int, range: ClosedRange<Int>)
    case exponentOutOfRange(exponent: Int, range: ClosedRange<Int>)

    public var description: String {
        switch self {
        case .mantissaOutOfRange(let mantissa, let range):
            "mantissa \(mantissa) is outside \(range.lowerBound)...\(range.upperBound) (the rest are reserved values)"
        case .exponentOutOfRange(let exponent, let range):
            "exponent \(exponent) is outside \(range.lowerBound)...\(range.upperBound)"
        }
    }
}

extension MedicalFloat {
    /// Largest mantissa magnitude that is a number; the five codes above it are reserved.
    public static var mantissaRange: ClosedRange<Int> {
        let limit = (1 << (mantissaBitCount - 1)) - 3
        return -limit...limit
    }

    public static var exponentRange: ClosedRange<Int> {
        let half = 1 << (exponentBitCount - 1)
        return -half...(half - 1)
    }

    /// Mantissa codes of the reserved values (exponent 0), per IEEE 11073-20601:
    /// +INF = 2^(n-1)-2, NaN = 2^(n-1)-1, NRes = -2^(n-1), RFU = -2^(n-1)+1, -INF = -2^(n-1)+2.
    static func reservedMantissa(_ special: MedicalFloatSpecial) -> Int {
        let half = 1 << (mantissaBitCount - 1)
        switch special {
        case .positiveInfinity: return half - 2
        case .nan: return half - 1
        case .notAtThisResolution: return -half
        case .reservedForFutureUse: return -half + 1
        case .negativeInfinity: return -half + 2
        }
    }

    private static var mantissaMask: UInt32 { (1 << UInt32(mantissaBitCount)) - 1 }
    private static var exponentMask: UInt32 { (1 << UInt32(exponentBitCount)) - 1 }

    private static func pack(mantissa: Int, exponent: Int) -> Self {
        let mantissaBits = UInt32(truncatingIfNeeded: mantissa) & mantissaMask
        let exponentBits = UInt32(truncatingIfNeeded: exponent) & exponentMask
        return Self(uncheckedBits: exponentBits << UInt32(mantissaBitCount) | mantissaBits)
    }

    /// An exact mantissa and exponent, e.g. (364, -1) for 36.4 at a resolution of 0.1.
    public init(mantissa: Int, exponent: Int) throws(MedicalFloatError) {
        guard Self.mantissaRange.contains(mantissa) else {
            throw .mantissaOutOfRange(mantissa: mantissa, range: Self.mantissaRange)
        }
        guard Self.exponentRange.contains(exponent) else {
            throw .exponentOutOfRange(exponent: exponent, range: Self.exponentRange)
        }
        self = Self.pack(mantissa: mantissa, exponent: exponent)
    }

    public init(_ special: MedicalFloatSpecial) {
        self = Self.pack(mantissa: Self.reservedMantissa(special), exponent: 0)
    }

    /// The closest representable value, keeping the most precision: the smallest exponent whose
    /// rounded mantissa (half away from zero) still fits. NaN maps to NaN, ±infinity and
    /// magnitudes beyond the largest number (2045 × 10^7 for SFLOAT) to ±INF; zero is 0 × 10^0,
    /// and values below half the finest step round to that zero.
    public init(_ value: Double) {
        if value.isNaN {
            self.init(MedicalFloatSpecial.nan)
            return
        }
        if value.isInfinite {
            self.init(value > 0 ? MedicalFloatSpecial.positiveInfinity : .negativeInfinity)
            return
        }
        if value == 0 {
            self = Self.pack(mantissa: 0, exponent: 0)
            return
        }
        let limit = Double(Self.mantissaRange.upperBound)
        // Exponents below this one give a mantissa of more digits than the limit has, so the
        // search starts here (one lower to absorb log10's rounding).
        let digits = Int(log10(limit)) + 1
        let first = max(Self.exponentRange.lowerBound, Int(log10(abs(value)).rounded(.down)) - digits - 1)
        for exponent in Self.exponentRange where exponent >= first {
            let scaled =
                exponent < 0
                ? value * decimalPower(-exponent) : value / decimalPower(exponent)
            let mantissa = scaled.rounded(.toNearestOrAwayFromZero)
            if abs(mantissa) <= limit {
                self = Self.pack(
                    mantissa: mantissa == 0 ? 0 : Int(mantissa),
                    exponent: mantissa == 0 ? 0 : exponent)
                return
            }
        }
        self.init(value > 0 ? MedicalFloatSpecial.positiveInfinity : .negativeInfinity)
    }

    /// The little-endian bytes on air.
    public var bytes: [UInt8] {
        (0..<((Self.mantissaBitCount + Self.exponentBitCount) / 8)).map {
            UInt8(truncatingIfNeeded: bits >> UInt32(8 * $0))
        }
    }

    /// Decodes exactly `(mantissa + exponent bits) / 8` little-endian bytes; nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == (Self.mantissaBitCount + Self.exponentBitCount) / 8 else { return nil }
        let bits = bytes.enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << UInt32(8 * $1.offset) }
        self.init(uncheckedBits: bits)
    }

    public var mantissa: Int {
        let raw = Int(bits & Self.mantissaMask)
        let half = 1 << (Self.mantissaBitCount - 1)
        return raw >= half ? raw - 2 * half : raw
    }

    public var exponent: Int {
        let raw = Int(bits >> UInt32(Self.mantissaBitCount) & Self.exponentMask)
        let half = 1 << (Self.exponentBitCount - 1)
        return raw >= half ? raw - 2 * half : raw
    }

    /// The reserved value this is, or nil when it is a number.
    public var special: MedicalFloatSpecial? {
        guard exponent == 0 else { return nil }
        return MedicalFloatSpecial.allCases.first { Self.reservedMantissa($0) == mantissa }
    }

    /// As a Double: NaN for NaN, NRes and RFU; ±infinity for ±INF.
    public var doubleValue: Double {
        switch special {
        case .nan, .notAtThisResolution, .reservedForFutureUse: return .nan
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case nil:
            // Dividing by an exact power of ten rounds once, so 364 × 10^-1 gives exactly 36.4.
            return exponent < 0
                ? Double(mantissa) / decimalPower(-exponent) : Double(mantissa) * decimalPower(exponent)
        }
    }

    /// mantissa × 10^exponent exactly (364 × 10^-1 is 36.4); nil for the reserved values.
    var decimal: DecimalNumber? {
        special == nil ? DecimalNumber(significand: Int64(mantissa), exponent: exponent) : nil
    }

    public var description: String {
        switch special {
        case .nan: "NaN"
        case .notAtThisResolution: "NRes"
        case .positiveInfinity: "+INF"
        case .negativeInfinity: "-INF"
        case .reservedForFutureUse: "RFU"
        case nil: "\(mantissa)e\(exponent)"
        }
    }
}

/// IEEE 11073-20601 SFLOAT: 16 bits, exponent -8...7, mantissa -2045...2045.
public struct MedFloat16: MedicalFloat {
    public static let mantissaBitCount = 12
    public static let exponentBitCount = 4
    public let bitPattern: UInt16
    public var bits: UInt32 { UInt32(bitPattern) }
    public init(uncheckedBits: UInt32) { bitPattern = UInt16(truncatingIfNeeded: uncheckedBits) }
    public init(bitPattern: UInt16) { self.bitPattern = bitPattern }
}

/// IEEE 11073-20601 FLOAT: 32 bits, exponent -128...127, mantissa -8388605...8388605.
public struct MedFloat32: MedicalFloat {
    public static let mantissaBitCount = 24
    public static let exponentBitCount = 8
    public let bitPattern: UInt32
    public var bits: UInt32 { bitPattern }
    public init(uncheckedBits: UInt32) { bitPattern = uncheckedBits }
    public init(bitPattern: UInt32) { self.bitPattern = bitPattern }
}

/// 10^n for n ≥ 0, by repeated multiplication: exact up to 10^22, the largest power of ten a
/// Double holds exactly, which covers every exponent a sensor value needs.
func decimalPower(_ n: Int) -> Double {
    var result = 1.0
    for _ in 0..<n { result *= 10 }
    return result
}
