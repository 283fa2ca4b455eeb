import Foundation
import Logging
import MQTTMirror
import TestHarness
import Testing

/// `gattway run` against a real mosquitto on a free loopback port: simulated sensor values reach
/// their topics, `/set` is applied or rejected on the error topic, and a clean stop says offline.
@Suite(.serialized, .timeLimit(.minutes(2)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct MQTTEndToEndTests {
    @Test func sensorValuesSetAndAvailabilityOverARealBroker() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let directory = try temporaryDirectory("e2e")
        let configPath = directory.appendingPathComponent("gattway.yaml").path
        try """
        device: {name: e2e}
        state_dir: \(directory.path)/state
        runtime_dir: \(directory.path)/run
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DOOR
                  generator:
                    type: steps
                    steps: [{level: 1, duration: 300ms}, {level: 0, duration: 300ms}]
        sensors:
          - {id: door, kind: binary, line: DOOR}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                name: door
                format: bool
                source: {sensor: door}
              - uuid: 6E400007-B5A3-F393-E0A9-E50E24DC0001
                name: label
                format: utf8
                max_length: 8
                source: {written: "start"}
                permissions: {write: open}
        mqtt:
          url: mqtt://127.0.0.1:\(broker.port)
          discovery: false
        """.write(toFile: configPath, atomically: true, encoding: .utf8)

        let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/e2e/#")
        let gateway = GattwayProcess(["run", "--config", configPath, "--hci", "tcp:127.0.0.1:19"])
        try gateway.start()
        defer { gateway.stop() }

        #expect(
            await watcher.first { $0.topic == "gattway/e2e/availability" && $0.text == "online" } != nil,
            "\(gateway.stderr)")
        let door = await watcher.first { $0.topic == "gattway/e2e/gateway/door" && $0.text?.contains(#""value":true"#) == true }
        #expect(door != nil, "a door value arrives on its topic")
        #expect(await watcher.first { $0.topic == "gattway/e2e/gateway/label" && $0.text?.hasPrefix(#"{"value":"start""#) == true } != nil)

        try watcher.publish("gattway/e2e/gateway/label/set", #""hello""#)
        #expect(await watcher.first { $0.topic == "gattway/e2e/gateway/label" && $0.text?.hasPrefix(#"{"value":"hello""#) == true } != nil)
        try watcher.publish("gattway/e2e/gateway/label/set", "12")
        let error = await watcher.first { $0.topic == "gattway/e2e/error" }
        #expect(error?.text?.contains("gattway/e2e/gateway/label/set") == true)
        #expect(error?.text?.contains("wrong type") == true)

        // Nothing listens on port 19: the connection is refused, so the host is retrying the
        // controller ("resetting"), not advertising, and nobody is connected.
        // (A state published before the host's first attempt says "unknown"; the one after it counts.)
        let state = await watcher.first {
            $0.topic == "gattway/e2e/state" && $0.text?.hasPrefix(#"{"state":"resetting""#) == true
        }
        #expect(
            state?.text?.hasPrefix(#"{"state":"resetting","advertising":false,"centrals":[],"uptime":"#) == true
                && state?.text?.contains(#""sent":0"#) == true,
            "\(state?.text ?? "no state")")

        gateway.signal(SIGTERM)
        // Within 5 s, not 2: a full test run loads both cores, and the loaded runs took longer.
        #expect(gateway.waitForExit(timeout: 5) == 0, "\(gateway.stderr)")
        #expect(await watcher.first { $0.topic == "gattway/e2e/availability" && $0.text == "offline" } != nil)
        await watcher.stop()
    }
}
