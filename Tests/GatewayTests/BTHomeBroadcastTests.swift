import BluetoothCore
import BluetoothHost
import Config
import Gateway
import Sensors
import Testing

/// Sensors with `bthome: true` in the advertising data: which readings, their bytes, the 31-byte
/// budget.
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

    static func value(_ sensor: String, _ channel: String, _ reading: Sensors.SensorValue.Reading) -> Sensors.SensorValue {
        Sensors.SensorValue(sensor: sensor, channel: channel, reading: reading, unit: "", timestampNs: 0)
    }

    static func value(_ sensor: String, _ reading: Sensors.SensorValue.Reading) -> Sensors.SensorValue {
        value(sensor, "value", reading)
    }

    /// `record` outside the expectation macros, which cannot call mutating members.
    func record(_ broadcast: inout BTHomeBroadcast, _ value: Sensors.SensorValue) -> Bool {
        broadcast.record(value)
    }

    @Test func newestReadingsBecomeSortedServiceData() throws {
        let config = try Self.config(Self.climateAndDoor)
        var broadcast = try #require(BTHomeBroadcast(config: config))
        let base = try #require(HostMapping.configuration(config).advertising)
        #expect(broadcast.settings(base: base).settings == base, "nothing to advertise before a reading")

        #expect(record(&broadcast, Self.value("door", .number(1))))
        #expect(record(&broadcast, Self.value("climate", "temperature", .number(25.06))))
        #expect(record(&broadcast, Self.value("climate", "humidity", .number(50.55))))
        #expect(!record(&broadcast, Self.value("pulses", .number(3))), "pulses is not broadcast")
        #expect(!record(&broadcast, Self.value("door", .number(1))), "unchanged")
        #expect(!record(&broadcast, Self.value("climate", "temperature", .failure(.timeout))), "a failure keeps the last value")

        let (settings, leftOut) = broadcast.settings(base: base)
        #expect(leftOut.isEmpty)
        let data = try #require(settings.serviceData.first { $0.uuid == BluetoothUUID(0xFCD2) }?.data)
        // v2 device information, temperature 0x02, humidity 0x03, generic boolean 0x0F: by object id.
        #expect(data == [0x40, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13, 0x0F, 0x01])
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(payload.notFitted.isEmpty)
        #expect(Array(payload.advertisingData.prefix(7)) == [0x02, 0x01, 0x06, 0x03, 0x09, 0x67, 0x77])
        #expect(Array(payload.advertisingData.suffix(13)) == [0x0C, 0x16, 0xD2, 0xFC] + data)

        #expect(record(&broadcast, Self.value("climate", "temperature", .number(26))))
        let newer = try #require(broadcast.settings(base: base).settings.serviceData.first?.data)
        #expect(Array(newer[1...3]) == [0x02, 0x28, 0x0A])
    }

    /// What does not fit the advertising and scan response data is left out reading by reading,
    /// from the last configured, and named; the rest is still advertised.
    @Test func whatDoesNotFitIsNamedNotCut() throws {
        let name = String(repeating: "n", count: 26)
        let config = try Self.config(
            """
              - {id: climate, kind: dht22, line: DHT, bthome: true}
              - {id: door, kind: binary, line: DOOR, bthome: true}
              - {id: pulses, kind: counter, line: PULSES, bthome: true}
            """, name: name)
        var broadcast = try #require(BTHomeBroadcast(config: config))
        var base = try #require(HostMapping.configuration(config).advertising)
        base.serviceData = [(uuid: BluetoothUUID(0x181A), data: Array(repeating: 0xAB, count: 10))]
        _ = broadcast.record(Self.value("climate", "temperature", .number(20)))
        _ = broadcast.record(Self.value("climate", "humidity", .number(40)))
        _ = broadcast.record(Self.value("door", .bool(true)))
        _ = broadcast.record(Self.value("pulses", .number(70_000)))
        // Advertising: flags (3) + name (28) = 31. Scan response: appearance (4) when configured and
        // the other service data (14): 13 or 17 bytes left; BTHome with every reading takes
        // 4 + 1 + 3 + 3 + 2 + 5 = 18: the counter (last configured) is left out, 13 remain.
        let (settings, leftOut) = broadcast.settings(base: base)
        #expect(leftOut == ["BTHome count32 of pulses does not fit in 31 bytes"])
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(payload.notFitted.isEmpty)
        #expect(
            Array(payload.scanResponseData.suffix(13)) == [0x0C, 0x16, 0xD2, 0xFC, 0x40, 0x02, 0xD0, 0x07, 0x03, 0xA0, 0x0F, 0x0F, 0x01])
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
        let (settings, leftOut) = broadcast.settings(base: base)
        #expect(leftOut.count == 1)
        #expect(leftOut.first?.hasPrefix("BTHome temperature of climate (") == true)
        #expect(settings.serviceData.first?.data == [0x40, 0x03, 0xA0, 0x0F])
    }

    @Test func noBroadcastSensorsNoBroadcast() throws {
        #expect(BTHomeBroadcast(config: try Self.config(Self.climateAndDoor.replacingOccurrences(of: ", bthome: true", with: ""))) == nil)
    }
}
