import Foundation
import TestHarness
import Testing

/// The `gattway` executable's BTHome broadcasts as Home Assistant receives them: a Bumble scanner
/// scanning passively (no scan requests, as Home Assistant's Bluetooth integration scans) hands
/// each advertisement to bthome-ble, the parser of Home Assistant's BTHome integration.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct BTHomeEndToEndTests {
    static let temperature = 23.4
    static let humidity = 56.7
    static let key = "5f3c1a2b9d8e7f60a1b2c3d4e5f60718"

    /// A DHT22, a door held closed (1) and a pulse counter at 2 Hz, all broadcast; a name too long
    /// to fit beside the BTHome data in the advertising data.
    static func config(name: String, keyFile: String? = nil) -> String {
        """
        device: {name: \(name)}
        bluetooth:
          advertising: {interval: 20ms}
        \(keyFile.map { "  bthome: {key_file: \($0)}" } ?? "")
        gpio:
          backend: simulated
          chips:
            - lines:
                - {name: DHT, generator: {type: dht22, temperature: \(temperature), humidity: \(humidity)}}
                - {name: DOOR, generator: {type: constant, level: 1}}
                - {name: PULSES, generator: {type: pulses, rate: 2}}
        sensors:
          - {id: climate, kind: dht22, line: DHT, interval: 2s, bthome: true}
          - {id: door, kind: binary, line: DOOR, bthome: true}
          - {id: pulses, kind: counter, line: PULSES, bthome: true}
        """
    }

    /// A packet with every reading: bthome-ble's keys for temperature (0x02), humidity (0x03),
    /// count (0x3E) and the generic boolean (0x0F).
    static func complete(_ packet: BTHomePacket) -> Bool {
        packet.sensors["temperature"] != nil && packet.sensors["humidity"] != nil
            && packet.sensors["count"] != nil && packet.binarySensors["generic"] != nil
    }

    /// The simulated sensors' values, as bthome-ble decoded them.
    static func expectSimulatedValues(_ packet: BTHomePacket, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(packet.sensors["temperature"] == temperature, "\(packet)", sourceLocation: sourceLocation)
        #expect(packet.sensors["humidity"] == humidity, "\(packet)", sourceLocation: sourceLocation)
        #expect(packet.binarySensors["generic"] == true, "\(packet)", sourceLocation: sourceLocation)
        // The pulse count at that moment: a whole number (it grows; the tests compare two packets).
        let count = packet.sensors["count"] ?? -1
        #expect(count >= 0 && count == count.rounded(), "\(packet)", sourceLocation: sourceLocation)
        #expect(packet.packetID != nil, "packet id (object 0x00): \(packet)", sourceLocation: sourceLocation)
        #expect(packet.scanResponses == 0, "a passive scanner gets no scan responses", sourceLocation: sourceLocation)
        // Flags (LE Limited Discoverable while the first start's pairing window is open, else
        // General), then the BTHome service data (AD type 0x16, UUID D2 FC) in the advertising data.
        #expect(
            ["020105", "020106"].contains(packet.advertisingData.prefix(6))
                && packet.advertisingData.dropFirst(8).hasPrefix("16d2fc"),
            "\(packet.advertisingData)", sourceLocation: sourceLocation)
    }

    @Test func plainBroadcastsDecodeWithBTHomeBLE() async throws {
        let rig = try await GatewayRig(config: Self.config(name: "bthome-plain-e2e"), advertisedName: "bthome-plain-e2e")
        defer { rig.stop() }
        let scanner = try await BTHomeScanner(controllerPort: rig.controller.tcpPort)
        defer { scanner.stop() }
        let packet = try #require(
            try await scanner.packet(within: .seconds(40), where: Self.complete), "no complete BTHome packet:\n\(rig.log)")
        #expect(!packet.encrypted)
        Self.expectSimulatedValues(packet)
        // The count moves on: the next packet has a new packet id, or bthome-ble would drop it.
        let next = try #require(try await scanner.packet(within: .seconds(10)), "no second packet")
        #expect(next.packetID != packet.packetID)
        #expect((next.sensors["count"] ?? 0) > (packet.sensors["count"] ?? 0), "\(packet) → \(next)")
    }

    /// Encrypted with the bind key: bthome-ble with the key decrypts the values; without it sees
    /// encrypted packets and no values. The counter never goes backwards across a restart.
    @Test func encryptedBroadcastsDecodeWithTheBindKeyAcrossARestart() async throws {
        let keyFile = try temporaryDirectory("bthome-key").appendingPathComponent("bthome.key").path
        try (Self.key + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
        let rig = try await GatewayRig(
            config: Self.config(name: "bthome-key-e2e", keyFile: keyFile), advertisedName: "bthome-key-e2e")
        defer { rig.stop() }
        let scanner = try await BTHomeScanner(controllerPort: rig.controller.tcpPort, bindKey: Self.key)
        defer { scanner.stop() }
        let keyless = try await BTHomeScanner(controllerPort: rig.controller.tcpPort)
        defer { keyless.stop() }

        let packet = try #require(
            try await scanner.packet(within: .seconds(40), where: Self.complete), "no complete BTHome packet:\n\(rig.log)")
        #expect(packet.encrypted && packet.bindKeyVerified, "\(packet)")
        Self.expectSimulatedValues(packet)
        let unread = try #require(try await keyless.packet(within: .seconds(10)), "the scanner without a key saw nothing")
        #expect(unread.encrypted)
        #expect(unread.sensors["temperature"] == nil && unread.binarySensors.isEmpty, "\(unread)")

        // Each new packet (the count moves on) has the next counter, and a new packet id.
        let later = try #require(try await scanner.packet(within: .seconds(10)), "no second packet")
        let lastCounter = try #require(later.counter)
        #expect(lastCounter > (packet.counter ?? .max), "\(packet) → \(later)")
        #expect(later.packetID != packet.packetID)
        #expect((later.sensors["count"] ?? 0) > (packet.sensors["count"] ?? 0), "\(packet) → \(later)")
        try rig.restartGattway()
        scanner.discardReceived()
        let restarted = try #require(
            try await scanner.packet(within: .seconds(40), where: Self.complete),
            "no complete BTHome packet after the restart:\n\(rig.log)")
        Self.expectSimulatedValues(restarted)
        let counter = try #require(restarted.counter)
        #expect(counter > lastCounter, "the counter went from \(lastCounter) to \(counter) across the restart")
        print("BTHome encryption counter: \(lastCounter) before the restart, \(counter) after")
    }

    /// A button pressed once, twice quickly, then held (again and again, two seconds apart):
    /// bthome-ble fires `press`, `double_press`, `long_press`, each once — the packets after an
    /// event say "no event", and each packet has a new id. In the clear, and encrypted with the
    /// bind key (bthome-ble decrypting with it).
    @Test(arguments: [false, true]) func buttonPressesFireBTHomeEventsOnce(encrypted: Bool) async throws {
        var keyLine = ""
        if encrypted {
            let keyFile = try temporaryDirectory("bthome-key").appendingPathComponent("bthome.key").path
            try (Self.key + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
            keyLine = "  bthome: {key_file: \(keyFile)}"
        }
        let config = """
            device: {name: bthome-button-e2e}
            bluetooth:
              advertising: {interval: 20ms}
            \(keyLine)
            gpio:
              backend: simulated
              chips:
                - lines:
                    - name: BUTTON
                      generator:
                        type: steps
                        steps:
                          - {level: 0, duration: 1500ms}
                          - {level: 1, duration: 100ms}
                          - {level: 0, duration: 2s}
                          - {level: 1, duration: 80ms}
                          - {level: 0, duration: 100ms}
                          - {level: 1, duration: 80ms}
                          - {level: 0, duration: 2s}
                          - {level: 1, duration: 1200ms}
                          - {level: 0, duration: 1500ms}
            sensors:
              - {id: button, kind: binary, line: BUTTON, debounce: 10ms, press: {}, bthome: true}
            """
        let rig = try await GatewayRig(config: config, advertisedName: "bthome-button-e2e")
        defer { rig.stop() }
        let scanner = try await BTHomeScanner(controllerPort: rig.controller.tcpPort, bindKey: encrypted ? Self.key : nil)
        defer { scanner.stop() }
        let press = try #require(
            try await scanner.packet(within: .seconds(40), where: { $0.events["button"] == "press" }),
            "no press event:\n\(rig.log)")
        #expect(press.encrypted == encrypted && (!encrypted || press.bindKeyVerified), "\(press)")
        var events: [String] = []
        var packetIDs = [press.packetID]
        while events.count < 2, let packet = try await scanner.packet(within: .seconds(15)) {
            packetIDs.append(packet.packetID)
            if let event = packet.events["button"] { events.append(event) }
        }
        #expect(events == ["double_press", "long_press"], "after the press, in \(packetIDs.count) packets")
        #expect(packetIDs.count > 3, "packets without an event came between (the level changes)")
        #expect(zip(packetIDs, packetIDs.dropFirst()).allSatisfy { $0 != $1 }, "\(packetIDs)")
    }
}
