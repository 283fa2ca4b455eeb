import Foundation
import TestHarness
import Testing

/// Pairing only when the owner permits it, through the `gattway` executable and Bumble phones:
/// outside a pairing window a new phone's Pairing Request gets Pairing Failed (Pairing Not
/// Supported) and the relay refuses its write; `gattway pair` opens the window, the phone pairs
/// and writes; once the window closed by itself a second new phone is refused while the first
/// reconnects, encrypts with its bond and writes. The advertising flags and MQTT's state topic
/// say whether the window is open.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct PairingWindowEndToEndTests {
    static let relay = "6E400003-B5A3-F393-E0A9-E50E24DC0031"

    /// A relay that needs a bonded link to write (the default), and no window at the first start.
    static let config = """
        device: {name: pairwin}
        bluetooth:
          advertising: {interval: 20ms}
          security: {first_start_window: 0s}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: RELAY
        sensors:
          - {id: relay, kind: output, line: RELAY}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0031
            name: gateway
            characteristics:
              - uuid: \(relay)
                name: relay
                format: bool
                source: {sensor: relay}
        """

    /// The Flags AD field (Core Supplement Part A 1.3): LE Limited Discoverable (0x05) while the
    /// window is open, LE General Discoverable (0x06) otherwise; BR/EDR not supported in both.
    static func flags(_ found: PhoneReply) -> String? {
        found.string("adv_data").map { String($0.prefix(6)) }
    }

    /// Pairs, expecting the refusal: Pairing Failed with Pairing Not Supported (0x05).
    static func expectRefusal(_ phone: Phone, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let refused = try await phone.run("pair", ["io": "no_input_no_output", "mitm": false])
        #expect(!refused.ok, "pairing outside the window must fail", sourceLocation: sourceLocation)
        #expect(refused.int("smp_error") == 0x05, "\(refused.object)", sourceLocation: sourceLocation)
    }

    /// Writes the relay on; true when gattway accepted it.
    static func writeRelay(_ phone: Phone, _ handle: Int, _ value: String = "01") async throws -> PhoneReply {
        try await phone.run("write", ["handle": handle, "value": value])
    }

    static func gattway(_ arguments: [String]) async throws -> (status: Int32?, stdout: String, stderr: String) {
        try await GattwayProcess(arguments).runToCompletion()
    }

    @Test func newPhonesPairOnlyInsideTheWindowAndABondedPhoneReconnectsAfterIt() async throws {
        let rig = try await GatewayRig(config: Self.config, advertisedName: "pairwin", broker: true)
        defer { rig.stop() }
        let broker = try #require(rig.broker)
        let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/pairwin/state")
        defer { Task { await watcher.stop() } }
        #expect(
            await watcher.first { $0.text?.contains(#","pairing":false,"#) == true } != nil,
            "the state topic says the window is closed")

        // Outside the window: refused, counted, logged; the relay stays off.
        let first = try await rig.phone()
        let closedAdvertising = try await rig.connect(first)
        #expect(Self.flags(closedAdvertising) == "020106", "LE General Discoverable while closed")
        let relay = try await first.valueHandle(of: Self.relay)
        try await Self.expectRefusal(first)
        let unpaired = try await Self.writeRelay(first, relay)
        #expect(!unpaired.ok && unpaired.int("att_error") != nil, "an unbonded phone cannot write: \(unpaired.object)")
        #expect(rig.waitForLog("pairing with \(first.address) refused: no pairing window is open"))

        // `gattway pair` opens the window: advertised, on MQTT, and the phone pairs and writes.
        let mark = watcher.count
        // Long enough for a loaded machine to start a phone, scan and pair inside it (a rehearsal
        // with a build beside it took 11 s from the window's opening to the scan).
        let opened = try await Self.gattway(["pair", "--for", "25s", "--config", rig.configPath])
        #expect(opened.status == 0, "\(opened.stderr)")
        #expect(opened.stdout.hasPrefix("pairing window open for "), "\(opened.stdout)")
        #expect(opened.stdout.contains("1 pairings refused since the start"), "\(opened.stdout)")
        #expect(
            await watcher.first(after: mark) { $0.text?.contains(#","pairing":true,"#) == true } != nil,
            "the state topic says the window is open")
        let scout = try await rig.phone()
        let found = try await scout.run("scan", ["name": "pairwin", "timeout": 10])
        #expect(Self.flags(found) == "020105", "LE Limited Discoverable while open: \(found.object)")
        let paired = try await first.expect("pair", ["io": "no_input_no_output", "mitm": false])
        #expect(paired["bonded"] as? Bool == true)
        #expect(try await Self.writeRelay(first, relay).ok, "a bonded phone writes the relay")

        // The window closes by itself; a second new phone is refused and cannot write.
        #expect(rig.waitForLog("pairing window closed", timeout: 45))
        let openedAt = try #require(watcher.messages.firstIndex { $0.text?.contains(#","pairing":true,"#) == true })
        #expect(
            await watcher.first(after: openedAt + 1) { $0.text?.contains(#","pairing":false,"#) == true } != nil,
            "the state topic says the window closed")
        let second = try await rig.phone()
        try await rig.connect(second)
        let secondRelay = try await second.valueHandle(of: Self.relay)
        try await Self.expectRefusal(second)
        #expect(!(try await Self.writeRelay(second, secondRelay, "00")).ok, "the refused phone cannot write")

        // The first phone reconnects: it encrypts with its bond and writes, window or not.
        try await first.expect("disconnect")
        try await rig.connect(first)
        var encrypted = false
        for _ in 0..<50 where !encrypted {
            encrypted = try await first.expect("security")["encrypted"] as? Bool == true
            if !encrypted { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(encrypted, "the bonded phone encrypts with its key (gattway asks it to)")
        #expect(try await Self.writeRelay(first, relay, "00").ok, "and writes again after the window")

        let status = try await Self.gattway(["status", "--config", rig.configPath])
        #expect(
            status.stdout.contains("pairing window closed (gattway pair opens it); 2 pairings refused since the start"), "\(status.stdout)")
    }
}
