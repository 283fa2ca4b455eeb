import BluetoothCore
import Testing

@testable import Values

/// Presentation Format (0x2904), User Description (0x2901) and the Environmental Sensing
/// descriptors, byte for byte.
struct DescriptorTests {
    /// Each unit's UUID from Assigned Numbers ("Units"), placed little-endian in bytes 2-3 of
    /// the 7-byte descriptor: format, exponent, unit, name space 0x01, description 0x0000.
    @Test(arguments: [
        (GATTUnit.unitless, UInt16(0x2700)), (.metre, 0x2701), (.kilogram, 0x2702), (.second, 0x2703),
        (.ampere, 0x2704), (.kelvin, 0x2705), (.metresPerSecond, 0x2712), (.metresPerSecondSquared, 0x2713),
        (.hertz, 0x2722), (.newton, 0x2723), (.pascal, 0x2724), (.joule, 0x2725), (.watt, 0x2726),
        (.volt, 0x2728), (.ohm, 0x272A), (.celsius, 0x272F), (.lux, 0x2731), (.minute, 0x2760),
        (.hour, 0x2761), (.day, 0x2762), (.degree, 0x2763), (.litre, 0x2767), (.bar, 0x2780),
        (.millimetreOfMercury, 0x2781), (.kilometresPerHour, 0x27A6), (.revolutionsPerMinute, 0x27A8),
        (.kilowattHour, 0x27AB), (.fahrenheit, 0x27AC), (.percent, 0x27AD), (.perMille, 0x27AE),
        (.beatsPerMinute, 0x27AF), (.ampereHours, 0x27B0), (.countPerCubicMetre, 0x27B5),
        (.wattsPerSquareMetre, 0x27B6), (.litresPerSecond, 0x27C2), (.decibel, 0x27C3),
        (.partsPerMillion, 0x27C4), (.partsPerBillion, 0x27C5)
    ])
    func presentationFormatPerUnit(unit: GATTUnit, uuid: UInt16) throws {
        let encoding = try ValueEncoding(.sint16, exponent: -2)
        let bytes = PresentationFormat(encoding, unit: unit).bytes
        #expect(bytes == [0x0E, 0xFE, UInt8(uuid & 0xFF), UInt8(uuid >> 8), 0x01, 0x00, 0x00])
        #expect(GATTUnit(uuid16: uuid) == unit)
        #expect(try PresentationFormat(bytes: bytes) == PresentationFormat(encoding, unit: unit))
    }

    @Test func everyUnitIsInTheTable() {
        #expect(Set(GATTUnit.allCases.map(\.uuid16)).count == GATTUnit.allCases.count)
    }

    /// Format codes from Assigned Numbers ("Formats").
    @Test(arguments: [
        (ValueFormat.bool, UInt8(0x01)), (.uint8, 0x04), (.uint16, 0x06), (.uint24, 0x07), (.uint32, 0x08),
        (.sint8, 0x0C), (.sint16, 0x0E), (.sint32, 0x10), (.float32, 0x14), (.float64, 0x15),
        (.medfloat16, 0x16), (.medfloat32, 0x17), (.utf8, 0x19), (.bytes, 0x1B)
    ])
    func formatCodes(format: ValueFormat, code: UInt8) throws {
        #expect(format.presentationFormatCode == code)
        let bytes = PresentationFormat(try ValueEncoding(format), unit: .unitless).bytes
        #expect(bytes == [code, 0x00, 0x00, 0x27, 0x01, 0x00, 0x00])
    }

    @Test func presentationFormatRejectsWrongLength() {
        #expect(throws: ValueError.wrongLength(format: .bytes, expected: 7, got: 6)) {
            try PresentationFormat(bytes: [0x0E, 0xFE, 0x2F, 0x27, 0x01, 0x00])
        }
    }

    @Test func userDescription() throws {
        #expect(try UserDescription.bytes("Küche") == [0x4B, 0xC3, 0xBC, 0x63, 0x68, 0x65])
        #expect(throws: ValueError.tooLong(length: 513, maximum: 512)) {
            try UserDescription.bytes(String(repeating: "a", count: 513))
        }
    }

    /// The ESS shortcuts: UUID, encoding, unit and therefore the Presentation Format.
    @Test(arguments: [
        (EnvironmentalSensingCharacteristic.temperature, UInt16(0x2A6E), [UInt8]([0x0E, 0xFE, 0x2F, 0x27, 0x01, 0x00, 0x00])),
        (.humidity, 0x2A6F, [0x06, 0xFE, 0xAD, 0x27, 0x01, 0x00, 0x00]),
        (.pressure, 0x2A6D, [0x08, 0xFF, 0x24, 0x27, 0x01, 0x00, 0x00]),
        (.trueWindSpeed, 0x2A70, [0x06, 0xFE, 0x12, 0x27, 0x01, 0x00, 0x00]),
        (.trueWindDirection, 0x2A71, [0x06, 0xFE, 0x63, 0x27, 0x01, 0x00, 0x00]),
        (.uvIndex, 0x2A76, [0x04, 0x00, 0x00, 0x27, 0x01, 0x00, 0x00]),
        (.rainfall, 0x2A78, [0x06, 0xFD, 0x01, 0x27, 0x01, 0x00, 0x00]),
        (.dewPoint, 0x2A7B, [0x0C, 0x00, 0x2F, 0x27, 0x01, 0x00, 0x00]),
        (.illuminance, 0x2AFB, [0x07, 0xFE, 0x31, 0x27, 0x01, 0x00, 0x00])
    ])
    func environmentalSensingShortcuts(
        characteristic: EnvironmentalSensingCharacteristic, uuid: UInt16,
        presentation: [UInt8]
    ) {
        #expect(characteristic.uuid == BluetoothUUID(uuid))
        #expect(characteristic.presentationFormat.bytes == presentation)
    }

    @Test func temperatureAndPressureValues() throws {
        #expect(try EnvironmentalSensingCharacteristic.temperature.encoding.encode(.number(21.37)) == [0x59, 0x08])
        #expect(try EnvironmentalSensingCharacteristic.humidity.encoding.encode(.number(45.5)) == [0xC6, 0x11])
        #expect(
            try EnvironmentalSensingCharacteristic.pressure.encoding.encode(.number(100_000.5))
                == [0x45, 0x42, 0x0F, 0x00])
    }

    /// ES Measurement (0x290C): flags 0x0000, sampling function, period (uint24), update interval
    /// (uint24), application, uncertainty.
    @Test func esMeasurementBytes() {
        let measurement = ESMeasurement(
            samplingFunction: .arithmeticMean, measurementPeriodSeconds: 3600,
            updateIntervalSeconds: 60, application: .outside, uncertainty: 0x01)
        #expect(measurement.bytes == [0x00, 0x00, 0x02, 0x10, 0x0E, 0x00, 0x3C, 0x00, 0x00, 0x1C, 0x01])
        #expect(ESMeasurement().bytes == [0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x00, 0xFF])
        #expect(ESMeasurement(measurementPeriodSeconds: 0x0100_0000).measurementPeriodSeconds == 0xFF_FFFF)
    }
}

struct SensorDescriptorTests {
    @Test func sensorGetsNamePresentationAndMeasurement() throws {
        let kind = EnvironmentalSensingCharacteristic.temperature
        let descriptors = try SensorDescriptors.make(
            name: "Outside", encoding: kind.encoding, unit: kind.unit,
            measurement: ESMeasurement(application: .outside))
        #expect(descriptors.map(\.uuid) == [BluetoothUUID(0x2901), BluetoothUUID(0x2904), BluetoothUUID(0x290C)])
        #expect(descriptors[0].value == Array("Outside".utf8))
        #expect(descriptors[1].value == [0x0E, 0xFE, 0x2F, 0x27, 0x01, 0x00, 0x00])
        #expect(descriptors[2].value == [0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0x1C, 0xFF])
        #expect(try SensorDescriptors.make(name: "x", encoding: ValueEncoding(.bool), unit: .unitless).count == 2)
    }
}
