import BluetoothCore
import Foundation
import MQTTMirror
import TestHarness
import Testing

/// `gattway run` with a Bumble phone and a real mosquitto: the default permissions keep an
/// unpaired phone from writing, the random passkey is published on `<base>/<dev>/pairing`, the
/// phone pairs with it, `centrals/<address>` reports the real link security, and the run's log
/// (at trace level) holds none of the keys stored in the 0600 bond file.
@Suite(.serialized, .timeLimit(.minutes(2)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct PairingGatewayTests {
    @Test func passkeyPairingOverMQTTUnlocksTheWriteAndKeepsKeysOutOfTheLog() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let controller = try await VirtualController()
        defer { controller.stop() }
        let directory = try temporaryDirectory("pairing")
        let state = directory.path + "/state"
        let configPath = directory.appendingPathComponent("gattway.yaml").path
        try """
        device: {name: pairing-e2e}
        state_dir: \(state)
        bluetooth:
          security: {io_capabilities: display_only}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: 6E400007-B5A3-F393-E0A9-E50E24DC0001
                name: label
                format: utf8
                max_length: 8
                source: {written: "start"}
        mqtt:
          url: mqtt://127.0.0.1:\(broker.port)
          discovery: false
        """.write(toFile: configPath, atomically: true, encoding: .utf8)

        let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/pairing-e2e/#")
        defer { Task { await watcher.stop() } }
        let gateway = GattwayProcess([
            "run", "--config", configPath, "--hci", "tcp:127.0.0.1:\(controller.tcpPort)",
            "--log-level", "trace"
        ])
        try gateway.start()
        defer { gateway.stop() }
        #expect(await watcher.first { $0.topic == "gattway/pairing-e2e/availability" && $0.text == "online" } != nil)

        let phone = try await Phone(controllerPort: controller.tcpPort)
        let found = try await phone.expect("scan", ["name": "pairing-e2e"])
        try await phone.expect("connect", ["address": try #require(found.string("address"))])
        let services = try await phone.expect("discover")["services"] as? [[String: Any]] ?? []
        let label = try #require(
            services.flatMap { $0["characteristics"] as? [[String: Any]] ?? [] }
                .first { ($0["uuid"] as? String)?.uppercased().hasPrefix("6E400007") == true }?["value_handle"] as? Int)

        // Writable characteristics need an encrypted, bonded link unless the configuration says open.
        let refused = try await phone.run("write", ["handle": label, "value": "6869"])
        #expect(refused.int("att_error") == 0x05, "Insufficient Authentication: \(refused.object)")
        let open = await watcher.first { $0.topic.hasPrefix("gattway/pairing-e2e/centrals/") }
        #expect(open?.text?.contains(#""security":"none","bonded":false"#) == true)

        try await phone.expect("pair", ["io": "keyboard_only", "wait": false])
        let published = await watcher.first { $0.topic == "gattway/pairing-e2e/pairing" }
        let text = try #require(published?.text)
        let field = try #require(text.range(of: #""passkey":"[0-9]{6}""#, options: String.CompareOptions.regularExpression))
        let passkey = String(text[field].dropFirst(11).prefix(6))
        #expect(gateway.stderr.contains("enter passkey \(passkey) on the device"))
        try await phone.expect("passkey", ["value": try #require(Int(passkey))])
        #expect(try await phone.expect("pairing")["authenticated"] as? Bool == true)

        let secured = await watcher.first {
            $0.topic.hasPrefix("gattway/pairing-e2e/centrals/")
                && $0.text?.contains(#""security":"authenticated","bonded":true"#) == true
        }
        #expect(secured != nil, "centrals/<address> reports the paired link")
        try await phone.expect("write", ["handle": label, "value": "6869"])
        #expect(
            await watcher.first { $0.topic == "gattway/pairing-e2e/gateway/label" && $0.text?.hasPrefix(#"{"value":"hi""#) == true } != nil)

        // The bond file is private; none of its keys is in the trace-level log of this run. Read
        // once the gateway has stopped: it hands the file to its state writer's thread, and
        // waits for that at its exit, not before the phone's next write is answered.
        gateway.signal(SIGTERM)
        _ = gateway.waitForExit(timeout: 3)
        let bondPath = state + "/bonds.json"
        var status = stat()
        #expect(stat(bondPath, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600 && status.st_uid == getuid())
        let file = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: bondPath))) as? [String: Any]
        let bond = try #require((file?["bonds"] as? [[String: Any]])?.first)
        let keys = ["longTermKey", "peerIdentityResolvingKey", "localIdentityResolvingKey"].compactMap { bond[$0] as? String }
        #expect(keys.count == 3)
        let log = (gateway.stderr + gateway.stdout).lowercased()
        #expect(log.contains("paired with"))
        for key in keys {
            let bytes = try #require([UInt8](hexString: key))
            let forward = bytes.map { String(format: "%02x", $0) }.joined()
            let backward = bytes.reversed().map { String(format: "%02x", $0) }.joined()
            #expect(!log.contains(forward) && !log.contains(backward), "a key is in the log")
        }
    }
}
