import BluetoothCore
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

    /// The button object (0x3A) with each event of the format documentation's list, as bthome-ble
    /// (Home Assistant's parser) maps them: 0x01 press … 0x80 hold_press, 0x81 hold_release.
    @Test(arguments: [
        (BTHomeButtonEvent.none, [UInt8]([0x3A, 0x00])),
        (.press, [0x3A, 0x01]),
        (.doublePress, [0x3A, 0x02]),
        (.triplePress, [0x3A, 0x03]),
        (.longPress, [0x3A, 0x04]),
        (.longDoublePress, [0x3A, 0x05]),
        (.longTriplePress, [0x3A, 0x06]),
        (.holdPress, [0x3A, 0x80]),
        (.holdRelease, [0x3A, 0x81])
    ])
    func buttonEvent(event: BTHomeButtonEvent, bytes: [UInt8]) throws {
        #expect(try BTHomeMeasurement(button: event).bytes() == bytes)
    }

    /// Device information 0x40 (v2, unencrypted, regular), the packet id (object 0x00) first, then
    /// the objects sorted by id whatever the order given: the documentation's temperature +
    /// humidity example; a button event sorts between 0x2D and 0x3D.
    @Test func serviceDataIsSortedByObjectIDAfterThePacketID() throws {
        let data = try BTHome.serviceData(
            [
                BTHomeMeasurement(.humidity, .number(50.55)),
                BTHomeMeasurement(.temperature, .number(25.06))
            ], packetID: 9)
        #expect(data == [0x40, 0x00, 0x09, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13])
        #expect(
            try BTHome.serviceData(
                [BTHomeMeasurement(.count16, .number(1)), BTHomeMeasurement(button: .press), BTHomeMeasurement(.motion, .bool(true))],
                packetID: 0xFF, triggerBased: true)
                == [0x44, 0x00, 0xFF, 0x21, 0x01, 0x3A, 0x01, 0x3D, 0x01, 0x00])
    }

    /// The inputs of https://bthome.io/encryption/'s example (key 231d…b932, address
    /// 54:48:E6:8F:80:A5, device information 0x41, temperature 25.06 °C and humidity 50.55 %,
    /// counter 0x33221100, on air 00 11 22 33) with the packet id the codec always adds, and a
    /// button event; the expected bytes from Python's `cryptography` AESCCM (4-byte MIC) with the
    /// nonce bthome-ble builds to decrypt: address, d2 fc, 41, counter.
    @Test(arguments: [
        (
            [BTHomeMeasurement(.temperature, .number(25.06)), BTHomeMeasurement(.humidity, .number(50.55))],
            UInt8(0xFF), UInt32(0x3322_1100), "41" + "a6476d00e963be7f" + "00112233" + "16f70284"
        ),
        ([BTHomeMeasurement(button: .doublePress)], 5, 7, "41" + "9c98875d" + "07000000" + "406d3e56")
    ])
    func encryptedServiceData(measurements: [BTHomeMeasurement], packetID: UInt8, counter: UInt32, expected: String) throws {
        let encryption = BTHomeEncryption(
            key: try #require(BTHomeKey(hex: "231d39c1d7cc1ab1aee224cd096db932")),
            address: try #require(BluetoothAddress("54:48:E6:8F:80:A5")), counter: counter)
        let data = try BTHome.serviceData(measurements, packetID: packetID, encryption: encryption)
        #expect(data.hexString == expected)
    }

    @Test func bindKeysAreThirtyTwoHexDigits() throws {
        #expect(BTHomeKey(hex: "231D39C1D7CC1AB1AEE224CD096DB932")?.bytes.first == 0x23)
        #expect(BTHomeKey(hex: "231d39c1d7cc1ab1aee224cd096db9") == nil)
        #expect(BTHomeKey(hex: "231d39c1d7cc1ab1aee224cd096db932aa") == nil)
        #expect(BTHomeKey(hex: "x31d39c1d7cc1ab1aee224cd096db932") == nil)
        #expect("\(try #require(BTHomeKey(hex: "231d39c1d7cc1ab1aee224cd096db932")))" == "BTHome bind key")
    }

    @Test func badValuesAreErrors() {
        #expect(throws: ValueError.wrongType(expected: .bool, got: "a number")) {
            try BTHomeMeasurement(.door, .number(1)).bytes()
        }
        #expect(throws: ValueError.outOfRange(value: 400, format: .sint16, range: -327.68...327.67)) {
            try BTHomeMeasurement(.temperature, .number(400)).bytes()
        }
        #expect(throws: ValueError.notAButtonEvent(.number(7))) {
            try BTHomeMeasurement(.button, .number(7)).bytes()
        }
    }
}
