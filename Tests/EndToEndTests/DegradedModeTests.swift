import Foundation
import TestHarness
import Testing

/// The BLE side is one part of the gateway: `gattway run` started while its controller is
/// missing runs the sensors and the MQTT mirror, tells systemd READY=1 with a STATUS= that says
/// Bluetooth is degraded (so the unit is not killed for never becoming ready), keeps retrying
/// the controller, and serves phones once the controller appears.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct DegradedModeTests {
    static let config = GatewayRig.binarySensorConfig(
        device: "degraded", service: "door", name: "open",
        uuidSuffix: "E50E24DC0003")

    @Test func withoutAControllerItRunsSensorsAndMQTTThenServesPhonesOnceOneAppears() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        // A TCP port with no controller behind it yet: one started and stopped at once.
        let probe = try await VirtualController()
        let port = probe.tcpPort
        probe.stop()
        let directory = try temporaryDirectory("degraded")
        let configPath = directory.appendingPathComponent("gattway.yaml").path
        try (Self.config + "\nstate_dir: \(directory.appendingPathComponent("state").path)\n")
            .write(toFile: configPath, atomically: true, encoding: .utf8)
        let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/degraded/#")
        do {
            try await Self.check(port: port, broker: broker, configPath: configPath, watcher: watcher)
        } catch {
            await watcher.stop()
            throw error
        }
        await watcher.stop()
    }

    private static func check(port: Int, broker: Broker, configPath: String, watcher: MQTTWatcher) async throws {
        let notify = try NotifySocket()
        let gattway = GattwayProcess(
            [
                "run", "--config", configPath, "--hci", "tcp:127.0.0.1:\(port)",
                "--mqtt", "mqtt://127.0.0.1:\(broker.port)"
            ],
            environment: ["NOTIFY_SOCKET": notify.path])
        try gattway.start()
        defer { gattway.stop() }

        // No controller: the sensor's value still reaches MQTT, and systemd hears ready, degraded.
        let value = await watcher.first(timeout: .seconds(30)) { $0.topic == "gattway/degraded/door/open" }
        #expect(value?.text?.hasPrefix(#"{"value":true,"#) == true, "the door's value on MQTT:\n\(gattway.stderr)")
        #expect(
            await notify.next(within: .seconds(30)) == "READY=1\nSTATUS=degraded: Bluetooth controller tcp:127.0.0.1:\(port) "
                + "unreachable or busy, retrying; sensors and MQTT running", "log:\n\(gattway.stderr)")

        // The controller appears on the configured transport: running, and a phone reads the door.
        let controller = try await VirtualController(port: port)
        defer { controller.stop() }
        #expect(await notify.next(within: .seconds(30)) == "STATUS=running", "log:\n\(gattway.stderr)")
        let phone = try await Phone(controllerPort: port)
        defer { phone.kill() }
        let found = try await phone.expect("scan", ["name": "degraded", "timeout": 20])
        _ = try await phone.expect("connect", ["address": try #require(found.string("address")), "timeout": 10])
        let handle = try await phone.valueHandle(of: "6E400002-B5A3-F393-E0A9-E50E24DC0003")
        #expect(try await phone.expect("read", ["handle": handle]).bytes("value") == [1])
    }
}
