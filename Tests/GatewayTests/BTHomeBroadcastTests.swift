import BluetoothCore
import BluetoothHost
import Config
import Gateway
import Sensors
import Testing
import Values

/// Sensors with `bthome: true` in the advertising data: which readings, their bytes, the packet
/// id, encryption, the 31-byte budget of the advertising data itself.
struct BTHomeBroadcastTests {
    static func config(_ sensors: String, name: String = "gw") throws -> GatewayConfig {
        try ConfigLoader.load(
            yaml: """
                device: {name: \(name)}
                bluetooth:
                  advertising: {local_name: \(name)}
                gpio:
                  backend: simulated
                  chips:
                    - lines:
                        - name: DHT
                        - name: DOOR
                        - name: PULSES
                        - name: PWM
                sensors:
                \(sensors)
                """
        ).config
    }

    static let climateAndDoor = """
          - {id: climate, kind: dht22, line: DHT, bthome: true}
          - {id: door, kind: binary, line: DOOR, bthome: true}
          - {id: pulses, kind: counter, line: PULSES}
        """

    static func value(_ sensor: String, _ channel: String, _ reading: SensorSample.Reading) -> SensorSample {
        SensorSample(sensor: sensor, channel: channel, reading: reading, timestampNs: 0)
    }

    static func value(_ sensor: String, _ reading: SensorSample.Reading) -> SensorSample {
        value(sensor, "value", reading)
    }

    /// `record` outside the expectation macros, which cannot call mutating members.
    func record(_ broadcast: inout BTHomeBroadcast, _ value: SensorSample) -> Bool {
        broadcast.record(value)
    }

    @Test func newestReadingsBecomeSortedServiceData() throws {
        let config = try Self.config(Self.climateAndDoor)
        var broadcast = try #require(BTHomeBroadcast(config: config))
        let base = try #require(HostMapping.configuration(config).advertising)
        #expect(broadcast.settings(base: base, packetID: 0, encryption: nil).settings == base, "nothing to advertise before a reading")

        #expect(record(&broadcast, Self.value("door", .number(1))))
        #expect(record(&broadcast, Self.value("climate", "temperature", .number(25.06))))
        #expect(record(&broadcast, Self.value("climate", "humidity", .number(50.55))))
        #expect(!record(&broadcast, Self.value("pulses", .number(3))), "pulses is not broadcast")
        #expect(!record(&broadcast, Self.value("door", .number(1))), "unchanged")
        #expect(!record(&broadcast, Self.value("climate", "temperature", .failure(.timeout))), "a failure keeps the last value")

        let (settings, leftOut) = broadcast.settings(base: base, packetID: 7, encryption: nil)
        #expect(leftOut.isEmpty)
        let data = try #require(settings.passiveServiceData?.data)
        // v2 device information, packet id 0x00 = 7, temperature 0x02, humidity 0x03, generic
        // boolean 0x0F: by object id.
        #expect(data == [0x40, 0x00, 0x07, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13, 0x0F, 0x01])
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(payload.notFitted.isEmpty)
        // Flags, then BTHome in the advertising data itself, then the name where it fits.
        #expect(Array(payload.advertisingData.prefix(18)) == [0x02, 0x01, 0x06, 0x0E, 0x16, 0xD2, 0xFC] + data)

        #expect(record(&broadcast, Self.value("climate", "temperature", .number(26))))
        let newer = try #require(broadcast.settings(base: base, packetID: 8, encryption: nil).settings.passiveServiceData?.data)
        #expect(Array(newer[1...5]) == [0x00, 0x08, 0x02, 0x28, 0x0A])
    }

    /// With a bind key the same readings go out encrypted: device information 0x41, the objects
    /// (packet id first) as AES-CCM ciphertext, the counter, the MIC; checked against Python's
    /// `cryptography` AESCCM with bthome-ble's nonce (address, d2 fc, 41, counter).
    @Test func encryptedPacketsCarryTheCounterAndMIC() throws {
        let config = try Self.config("  - {id: door, kind: binary, line: DOOR, bthome: true}")
        var broadcast = try #require(BTHomeBroadcast(config: config))
        _ = broadcast.record(Self.value("door", .bool(true)))
        let key = try #require(BTHomeKey(hex: "231d39c1d7cc1ab1aee224cd096db932"))
        let address = try #require(BluetoothAddress("54:48:E6:8F:80:A5"))
        let (settings, leftOut) = broadcast.settings(
            base: AdvertisingSettings(), packetID: 3,
            encryption: BTHomeEncryption(key: key, address: address, counter: 0x0102_0304))
        #expect(leftOut.isEmpty)
        // Plain objects 00 03 0F 01.
        #expect(settings.passiveServiceData?.data.hexString == "41" + "5aa2937a" + "04030201" + "42952ad5")
    }

    /// What does not fit the advertising data beside the flags is left out reading by reading,
    /// from the last configured, and named; the rest is still advertised, and the long name moves
    /// to the scan response.
    @Test func whatDoesNotFitIsNamedNotCut() throws {
        let name = String(repeating: "n", count: 26)
        let config = try Self.config(
            """
              - {id: climate, kind: dht22, line: DHT, bthome: true}
              - {id: door, kind: binary, line: DOOR, bthome: true}
              - {id: pulses, kind: counter, line: PULSES, bthome: true}
              - {id: lid, kind: binary, line: PWM, bthome: true}
            """, name: name)
        var broadcast = try #require(BTHomeBroadcast(config: config))
        let base = try #require(HostMapping.configuration(config).advertising)
        _ = broadcast.record(Self.value("climate", "temperature", .number(20)))
        _ = broadcast.record(Self.value("climate", "humidity", .number(40)))
        _ = broadcast.record(Self.value("door", .bool(true)))
        _ = broadcast.record(Self.value("pulses", .number(70_000)))
        _ = broadcast.record(Self.value("lid", .bool(false)))
        // Plain: flags (3) + BTHome (header 4, device information 1, packet id 2, temperature 3,
        // humidity 3, two booleans 2 + 2, count32 5) = 25 bytes; the name (28) goes to the scan
        // response, the appearance (4) fits beside BTHome.
        let plain = broadcast.settings(base: base, packetID: 1, encryption: nil)
        #expect(plain.leftOut.isEmpty)
        let plainPayload = AdvertisingPayload(settings: plain.settings, txPower: nil)
        #expect(plainPayload.advertisingData.count == 25 + 4)
        #expect(Array(plainPayload.scanResponseData.prefix(2)) == [27, 0x09], "the whole name in the scan response")
        // Encrypted: 8 bytes more, 33; without the last configured reading (lid) exactly 31.
        let encryption = BTHomeEncryption(
            key: try #require(BTHomeKey(hex: "00112233445566778899aabbccddeeff")),
            address: try #require(BluetoothAddress("C0:00:00:00:00:01")), counter: 1)
        let (settings, leftOut) = broadcast.settings(base: base, packetID: 1, encryption: encryption)
        #expect(leftOut == ["BTHome generic_boolean of lid does not fit in the advertising data"])
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(payload.advertisingData.count == 31)
        #expect(Array(payload.advertisingData[3...7]) == [27, 0x16, 0xD2, 0xFC, 0x41])
        #expect(!payload.notFitted.contains { $0.hasPrefix("service data") })
    }

    @Test func valuesOutOfRangeAndKindsWithoutAnObjectAreReported() throws {
        let config = try Self.config(
            """
              - {id: climate, kind: dht22, line: DHT, bthome: true}
              - {id: duty, kind: pulse_width, line: PWM, bthome: true}
            """)
        var broadcast = try #require(BTHomeBroadcast(config: config))
        #expect(broadcast.unsupported == ["sensor duty: a pulse_width sensor has no BTHome object; not broadcast"])
        _ = broadcast.record(Self.value("climate", "temperature", .number(400)))
        _ = broadcast.record(Self.value("climate", "humidity", .number(40)))
        let base = AdvertisingSettings()
        let (settings, leftOut) = broadcast.settings(base: base, packetID: 0, encryption: nil)
        #expect(leftOut.count == 1)
        #expect(leftOut.first?.hasPrefix("BTHome temperature of climate (") == true)
        #expect(settings.passiveServiceData?.data == [0x40, 0x00, 0x00, 0x03, 0xA0, 0x0F])
    }

    /// Presses as button events (0x3A): every button in every packet, in configuration order
    /// (receivers number buttons by it), the press in the next packet only, "no event" (0x00)
    /// after it; the same press again is a new event.
    @Test func pressesAreButtonEventsSentOnce() throws {
        let config = try Self.config(
            """
              - {id: left, kind: binary, line: DOOR, press: {}, bthome: true}
              - {id: right, kind: binary, line: PWM, press: {}, bthome: true}
            """)
        var broadcast = try #require(BTHomeBroadcast(config: config))
        #expect(record(&broadcast, Self.value("left", .bool(false))))
        #expect(record(&broadcast, Self.value("right", .bool(false))))
        func objects(_ packetID: UInt8) -> [UInt8] {
            Array(
                broadcast.settings(base: AdvertisingSettings(), packetID: packetID, encryption: nil).settings.passiveServiceData?.data
                    .dropFirst(3) ?? [])
        }
        // generic boolean ×2, then a button each, no event yet.
        #expect(objects(0) == [0x0F, 0x00, 0x0F, 0x00, 0x3A, 0x00, 0x3A, 0x00])
        #expect(record(&broadcast, Self.value("right", "press", .number(Double(PressEvent.double.rawValue)))))
        #expect(objects(1) == [0x0F, 0x00, 0x0F, 0x00, 0x3A, 0x00, 0x3A, 0x02], "the second button's double press")
        broadcast.eventsSent()
        #expect(objects(2) == [0x0F, 0x00, 0x0F, 0x00, 0x3A, 0x00, 0x3A, 0x00], "sent once")
        #expect(record(&broadcast, Self.value("left", "press", .number(Double(PressEvent.long.rawValue)))))
        #expect(objects(3) == [0x0F, 0x00, 0x0F, 0x00, 0x3A, 0x04, 0x3A, 0x00])
        broadcast.eventsSent()
        #expect(record(&broadcast, Self.value("left", "press", .number(Double(PressEvent.long.rawValue)))), "a second long press")
        #expect(objects(4) == [0x0F, 0x00, 0x0F, 0x00, 0x3A, 0x04, 0x3A, 0x00])
    }

    /// A packet whose advertising update failed (the controller resetting) did not carry its
    /// press anywhere: the press goes in the next packet, unless a newer press took its place.
    @Test func aPressWhosePacketDidNotGoOutIsSentInTheNext() throws {
        let config = try Self.config("  - {id: left, kind: binary, line: DOOR, press: {}, bthome: true}")
        var broadcast = try #require(BTHomeBroadcast(config: config))
        #expect(record(&broadcast, Self.value("left", .bool(false))))
        func objects() -> [UInt8] {
            Array(
                broadcast.settings(base: AdvertisingSettings(), packetID: 0, encryption: nil).settings.passiveServiceData?.data
                    .dropFirst(3) ?? [])
        }
        #expect(record(&broadcast, Self.value("left", "press", .number(Double(PressEvent.single.rawValue)))))
        let failed = broadcast.eventsSent()
        #expect(!failed.isEmpty)
        #expect(objects() == [0x0F, 0x00, 0x3A, 0x00])
        broadcast.eventsNotSent(failed)
        #expect(objects() == [0x0F, 0x00, 0x3A, 0x01], "the single press, again")
        #expect(broadcast.eventsSent().isEmpty == false)

        #expect(record(&broadcast, Self.value("left", "press", .number(Double(PressEvent.single.rawValue)))))
        let lost = broadcast.eventsSent()
        #expect(record(&broadcast, Self.value("left", "press", .number(Double(PressEvent.long.rawValue)))))
        broadcast.eventsNotSent(lost)
        #expect(objects() == [0x0F, 0x00, 0x3A, 0x04], "the newer press stays")
        #expect(broadcast.eventsSent().isEmpty == false)
        #expect(broadcast.eventsSent().isEmpty, "no press: nothing to put back")
    }

    @Test func noBroadcastSensorsNoBroadcast() throws {
        #expect(BTHomeBroadcast(config: try Self.config(Self.climateAndDoor.replacingOccurrences(of: ", bthome: true", with: ""))) == nil)
    }
}
