import Testing

@testable import Values

/// IEEE 11073-20601 SFLOAT and FLOAT against the standard's examples and reserved values.
struct MedicalFloatTests {
    /// Reserved values: exponent 0 and a fixed mantissa (IEEE 11073-20601, nomenclature of
    /// FLOAT-Type / SFLOAT-Type special values).
    @Test(arguments: [
        (MedicalFloatSpecial.nan, UInt16(0x07FF), UInt32(0x007F_FFFF)),
        (.notAtThisResolution, 0x0800, 0x0080_0000),
        (.positiveInfinity, 0x07FE, 0x007F_FFFE),
        (.negativeInfinity, 0x0802, 0x0080_0002),
        (.reservedForFutureUse, 0x0801, 0x0080_0001)
    ])
    func reservedValues(special: MedicalFloatSpecial, sfloat: UInt16, float: UInt32) {
        #expect(MedFloat16(special).bitPattern == sfloat)
        #expect(MedFloat32(special).bitPattern == float)
        #expect(MedFloat16(bitPattern: sfloat).special == special)
        #expect(MedFloat32(bitPattern: float).special == special)
    }

    /// Mantissa/exponent pairs and their bits: the Personal Health Devices transcoding examples
    /// (2 = 0x0002, 2.0 = 0xF014, 2.00 = 0xE0C8, 20 = 0x1002, -1234 = 0x0B2E) and the Health
    /// Thermometer's 36.4 °C = FLOAT 0xFF00016C.
    @Test(arguments: [
        (2, 0, UInt16(0x0002), UInt32(0x0000_0002)),
        (20, -1, 0xF014, 0xFF00_0014),
        (200, -2, 0xE0C8, 0xFE00_00C8),
        (2, 1, 0x1002, 0x0100_0002),
        (2, 2, 0x2002, 0x0200_0002),
        (-1234, 0, 0x0B2E, 0x00FF_FB2E),
        (364, -1, 0xF16C, 0xFF00_016C)
    ])
    func mantissaAndExponent(mantissa: Int, exponent: Int, sfloat: UInt16, float: UInt32) throws {
        let short = try MedFloat16(mantissa: mantissa, exponent: exponent)
        let long = try MedFloat32(mantissa: mantissa, exponent: exponent)
        #expect(short.bitPattern == sfloat)
        #expect(long.bitPattern == float)
        #expect(MedFloat16(bitPattern: sfloat).mantissa == mantissa)
        #expect(MedFloat16(bitPattern: sfloat).exponent == exponent)
        #expect(MedFloat32(bitPattern: float).mantissa == mantissa)
        #expect(MedFloat32(bitPattern: float).exponent == exponent)
        #expect(short.special == nil)
    }

    @Test func bytesAreLittleEndian() throws {
        #expect(try MedFloat32(mantissa: 364, exponent: -1).bytes == [0x6C, 0x01, 0x00, 0xFF])
        #expect(try MedFloat16(mantissa: 364, exponent: -1).bytes == [0x6C, 0xF1])
        #expect(MedFloat32(bytes: [0x6C, 0x01, 0x00, 0xFF])?.doubleValue == 36.4)
        #expect(MedFloat16(bytes: [0x6C, 0xF1])?.doubleValue == 36.4)
        #expect(MedFloat16(bytes: [0x6C]) == nil)
    }

    @Test func decodesToDoubles() {
        #expect(MedFloat16(bitPattern: 0x0B2E).doubleValue == -1234)
        #expect(MedFloat16(bitPattern: 0xE0C8).doubleValue == 2)
        #expect(MedFloat16(.positiveInfinity).doubleValue == .infinity)
        #expect(MedFloat16(.negativeInfinity).doubleValue == -.infinity)
        #expect(MedFloat16(MedicalFloatSpecial.nan).doubleValue.isNaN)
        #expect(MedFloat16(.notAtThisResolution).doubleValue.isNaN)
        #expect(MedFloat32(.reservedForFutureUse).doubleValue.isNaN)
    }

    /// The reserved mantissas are not numbers: constructing them as numbers is refused.
    @Test func reservedMantissasAreRefused() {
        #expect(throws: MedicalFloatError.mantissaOutOfRange(mantissa: 2046, range: -2045...2045)) {
            try MedFloat16(mantissa: 2046, exponent: 0)
        }
        #expect(throws: MedicalFloatError.mantissaOutOfRange(mantissa: -2046, range: -2045...2045)) {
            try MedFloat16(mantissa: -2046, exponent: 0)
        }
        #expect(throws: MedicalFloatError.exponentOutOfRange(exponent: 8, range: -8...7)) {
            try MedFloat16(mantissa: 1, exponent: 8)
        }
        #expect(throws: MedicalFloatError.mantissaOutOfRange(mantissa: 8_388_606, range: -8_388_605...8_388_605)) {
            try MedFloat32(mantissa: 8_388_606, exponent: 0)
        }
    }

    /// From a Double the smallest exponent whose rounded mantissa fits: most precision.
    @Test(arguments: [
        (36.4, 364, -1),
        (-1234.0, -1234, 0),
        (2.0, 2000, -3),
        (20.45, 2045, -2),
        (20.46, 205, -1),  // 2046 is reserved, so one digit less
        (0.001234, 1234, -6),
        (99_999.0, 1000, 2),  // rounds half away from zero to 10.00 × 10^4
        (-0.5, -500, -3),
        (0.000000004, 0, 0)  // below half the finest step (10^-8): zero
    ])
    func sfloatFromDouble(value: Double, mantissa: Int, exponent: Int) {
        let encoded = MedFloat16(value)
        #expect(encoded.mantissa == mantissa, "\(value) → \(encoded)")
        #expect(encoded.exponent == exponent, "\(value) → \(encoded)")
    }

    @Test(arguments: [
        (36.4, 3_640_000, -5),
        (101_325.0, 1_013_250, -1),
        (-273.15, -2_731_500, -4),
        (0.1, 1_000_000, -7)
    ])
    func floatFromDouble(value: Double, mantissa: Int, exponent: Int) {
        let encoded = MedFloat32(value)
        #expect(encoded.mantissa == mantissa, "\(value) → \(encoded)")
        #expect(encoded.exponent == exponent, "\(value) → \(encoded)")
        #expect(encoded.doubleValue == value)
    }

    /// Beyond the largest number (2045 × 10^7 for SFLOAT): ±INF; NaN: NaN.
    @Test func outOfRangeBecomesInfinity() {
        #expect(MedFloat16(2045e7).special == nil)
        #expect(MedFloat16(2046e7).special == .positiveInfinity)
        #expect(MedFloat16(-3e10).special == .negativeInfinity)
        #expect(MedFloat16(1e300).special == .positiveInfinity)
        #expect(MedFloat32(9e134).special == .positiveInfinity)
        #expect(MedFloat32(-.infinity).special == .negativeInfinity)
        #expect(MedFloat16(Double.nan).special == .nan)
        #expect(MedFloat16(0).bitPattern == 0)
    }
}
