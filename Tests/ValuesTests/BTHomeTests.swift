import Testing
@testable import Values

/// BTHome v2 objects against the examples in the BTHome format documentation
/// (https://bthome.io/format/: object id, example bytes, example value).
struct BTHomeTests {
    @Test(arguments: [
        (BTHomeObject.battery, SensorValue.number(97), [UInt8]([0x01, 0x61])),
        (.temperature, .number(25.06), [0x02, 0xCA, 0x09]),
        (.humidity, .number(50.55), [0x03, 0xBF, 0x13]),
        (.pressure, .number(1008.83), [0x04, 0x13, 0x8A, 0x01]),
        (.illuminance, .number(13460.67), [0x05, 0x13, 0x8A, 0x14]),
        (.count8, .number(96), [0x09, 0x60]),
        (.energy, .number(1346.067), [0x0A, 0x13, 0x8A, 0x14]),
        (.power, .number(69.14), [0x0B, 0x02, 0x1B, 0x00]),
        (.voltage, .number(3.074), [0x0C, 0x02, 0x0C]),
        (.co2, .number(1250), [0x12, 0xE2, 0x04]),
        (.moisture, .number(30.74), [0x14, 0x02, 0x0C]),
        (.count16, .number(24585), [0x3D, 0x09, 0x60]),
        (.count32, .number(1_611_213_866), [0x3E, 0x2A, 0x2C, 0x09, 0x60]),
        (.speed, .number(133.90), [0x44, 0x4E, 0x34]),
        (.uvIndex, .number(5.0), [0x46, 0x32]),
        (.genericBoolean, .bool(true), [0x0F, 0x01]),
        (.distance, .number(1.2), [0x40, 0xB0, 0x04]),
        (.opening, .bool(false), [0x11, 0x00]),
        (.door, .bool(false), [0x1A, 0x00]),
        (.moistureDetected, .bool(true), [0x20, 0x01]),
        (.motion, .bool(false), [0x21, 0x00]),
        (.window, .bool(true), [0x2D, 0x01])
    ])
    func objectMatchesDocumentedExample(object: BTHomeObject, value: SensorValue, bytes: [UInt8]) throws {
        #expect(try BTHomeMeasurement(object, value).bytes() == bytes)
    }

    /// Device information 0x40 (v2, unencrypted, regular), objects sorted by id whatever the
    /// order given: the documentation's temperature + humidity example.
    @Test func serviceDataIsSortedByObjectID() throws {
        let data = try BTHome.serviceData([
            BTHomeMeasurement(.humidity, .number(50.55)),
            BTHomeMeasurement(.temperature, .number(25.06))
        ])
        #expect(data == [0x40, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13])
        #expect(
            try BTHome.serviceData([BTHomeMeasurement(.motion, .bool(true))], triggerBased: true)
                == [0x44, 0x21, 0x01])
    }

    @Test func advertisingStructure() throws {
        let structure = try BTHome.advertisingStructure([BTHomeMeasurement(.battery, .number(97))])
        #expect(structure == [0x06, 0x16, 0xD2, 0xFC, 0x40, 0x01, 0x61])
    }

    @Test func badValuesAreErrors() {
        #expect(throws: ValueError.wrongType(expected: .bool, got: "a number")) {
            try BTHomeMeasurement(.door, .number(1)).bytes()
        }
        #expect(throws: ValueError.outOfRange(value: 400, format: .sint16, range: -327.68...327.67)) {
            try BTHomeMeasurement(.temperature, .number(400)).bytes()
        }
    }
}
