import Testing

@testable import Values

/// ES Trigger Setting (0x290D) and ES Configuration (0x290B) writes: each condition parses as
/// written, and bad writes get the ESS errors 0x80 / 0x81.
struct TriggerSettingTests {
    let temperature = EnvironmentalSensingCharacteristic.temperature.encoding

    @Test(arguments: [
        ([UInt8]([0x00]), ESTriggerSetting.inactive),
        ([0x01, 0x3C, 0x00, 0x00], .fixedTimeInterval(seconds: 60)),
        ([0x02, 0x10, 0x0E, 0x00], .noLessThanTimeInterval(seconds: 3600)),
        ([0x03], .valueChanged),
        ([0x04, 0xD0, 0x07], .compare(.lessThan, reference: .number(20))),
        ([0x05, 0xD0, 0x07], .compare(.lessThanOrEqual, reference: .number(20))),
        ([0x06, 0xC4, 0x09], .compare(.greaterThan, reference: .number(25))),
        ([0x07, 0xC4, 0x09], .compare(.greaterThanOrEqual, reference: .number(25))),
        ([0x08, 0x18, 0xFC], .compare(.equal, reference: .number(-10))),
        ([0x09, 0x00, 0x00], .compare(.notEqual, reference: .number(0)))
    ])
    func parsesEachCondition(bytes: [UInt8], setting: ESTriggerSetting) throws {
        let parsed = try ESTriggerSetting(descriptorValue: bytes, encoding: temperature)
        #expect(parsed == setting)
        #expect(parsed.condition.rawValue == bytes[0])
        #expect(parsed.bytes(encoding: temperature) == bytes)
    }

    @Test(arguments: [
        ([UInt8](), ESSErrorCode.writeRequestRejected),
        ([0x00, 0x01], .writeRequestRejected),  // inactive takes no operand
        ([0x03, 0x00], .writeRequestRejected),  // value changed takes no operand
        ([0x01, 0x3C, 0x00], .writeRequestRejected),  // interval is 3 bytes
        ([0x02, 0x3C, 0x00, 0x00, 0x00], .writeRequestRejected),
        ([0x01, 0x00, 0x00, 0x00], .writeRequestRejected),  // zero interval
        ([0x04, 0xD0], .writeRequestRejected),  // sint16 reference is 2 bytes
        ([0x06, 0xD0, 0x07, 0x00], .writeRequestRejected),
        ([0x0A], .conditionNotSupported),  // RFU
        ([0xFF, 0x00, 0x00], .conditionNotSupported)
    ])
    func rejectsBadWrites(bytes: [UInt8], code: ESSErrorCode) {
        let rejection = #expect(throws: ESSWriteRejection.self) {
            try ESTriggerSetting(descriptorValue: bytes, encoding: temperature)
        }
        #expect(rejection?.code == code)
    }

    @Test func unsupportedConditionsOfThisServerGet0x81() throws {
        let onlyTimers: Set<TriggerCondition> = [.inactive, .fixedTimeInterval, .noLessThanTimeInterval]
        #expect(throws: ESSWriteRejection(.conditionNotSupported, "condition valueChanged is not supported here")) {
            try ESTriggerSetting(descriptorValue: [0x03], encoding: temperature, supported: onlyTimers)
        }
        #expect(
            try ESTriggerSetting(descriptorValue: [0x01, 1, 0, 0], encoding: temperature, supported: onlyTimers)
                == .fixedTimeInterval(seconds: 1))
    }

    /// Ordering needs numbers; a text characteristic supports only equality.
    @Test func orderingOnTextIsNotSupported() throws {
        let text = try ValueEncoding(.utf8, maximumLength: 8)
        let rejection = #expect(throws: ESSWriteRejection.self) {
            try ESTriggerSetting(descriptorValue: [0x04, 0x61], encoding: text)
        }
        #expect(rejection?.code == .conditionNotSupported)
        #expect(
            try ESTriggerSetting(descriptorValue: [0x08, 0x61], encoding: text)
                == .compare(.equal, reference: .text("a")))
    }

    /// An SFLOAT reference that is NaN is no reference.
    @Test func nanReferenceIsRejected() throws {
        let sfloat = try ValueEncoding(.medfloat16)
        let rejection = #expect(throws: ESSWriteRejection.self) {
            try ESTriggerSetting(descriptorValue: [0x06, 0xFF, 0x07], encoding: sfloat)
        }
        #expect(rejection?.code == .writeRequestRejected)
        #expect(
            try ESTriggerSetting(descriptorValue: [0x06, 0x6C, 0xF1], encoding: sfloat)
                == .compare(.greaterThan, reference: .number(36.4)))
    }

    @Test(arguments: [
        (ValueComparison.lessThan, [true, false, false]),
        (.lessThanOrEqual, [true, true, false]),
        (.greaterThan, [false, false, true]),
        (.greaterThanOrEqual, [false, true, true]),
        (.equal, [false, true, false]),
        (.notEqual, [true, false, true])
    ])
    func comparisonsHoldAsWritten(comparison: ValueComparison, expected: [Bool]) {
        let results = [19.99, 20.0, 20.01].map { comparison.holds(.number($0), reference: .number(20)) }
        #expect(results == expected)
    }

    @Test func configurationLogic() throws {
        #expect(try TriggerLogic(descriptorValue: [0x00]) == .and)
        #expect(try TriggerLogic(descriptorValue: [0x01]) == .or)
        #expect(TriggerLogic.or.bytes == [0x01])
        for bad: [UInt8] in [[], [0x02], [0x00, 0x00]] {
            let rejection = #expect(throws: ESSWriteRejection.self) { try TriggerLogic(descriptorValue: bad) }
            #expect(rejection?.code == .writeRequestRejected)
        }
    }
}
