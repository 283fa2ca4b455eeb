import Foundation
import TestHarness
import Testing

/// MQTT's `/set` gets no more than a phone: on a characteristic no central may write (a sensor's
/// reading) it is refused on `<base>/<dev>/error`, and neither MQTT nor a phone sees a new value.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct SetPermissionTests {
    static let config = GatewayRig.binarySensorConfig(
        device: "setperm", service: "hall", name: "motion",
        uuidSuffix: "E50E24DC0004")

    @Test func setOnAReadOnlySensorIsRefusedAndChangesNothing() async throws {
        let rig = try await GatewayRig(config: Self.config, advertisedName: "setperm", broker: true)
        defer { rig.stop() }
        let broker = try #require(rig.broker)
        let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/setperm/#")
        do {
            let topic = "gattway/setperm/hall/motion"
            let first = await watcher.first { $0.topic == topic && $0.text?.hasPrefix(#"{"value":true,"#) == true }
            try #require(first != nil, "the sensor's value on MQTT:\n\(rig.log)")
            let mark = watcher.count
            try watcher.publish("\(topic)/set", "false")
            let error = try #require(
                await watcher.first(after: mark) { $0.topic == "gattway/setperm/error" },
                "the refusal on the error topic:\n\(rig.log)")
            #expect(
                error.text?.hasPrefix(#"{"topic":"gattway/setperm/hall/motion/set","reason":"read-only: centrals cannot write hall/motion"#)
                    == true,
                "\(error.text ?? "")")
            #expect(!watcher.messages.dropFirst(mark).contains { $0.topic == topic }, "no new value after the refused /set")

            let (phone, _) = try await rig.connectedPhone()
            let handle = try await phone.valueHandle(of: "6E400002-B5A3-F393-E0A9-E50E24DC0004")
            #expect(try await phone.expect("read", ["handle": handle]).bytes("value") == [1], "the phone still reads the sensor")
        } catch {
            await watcher.stop()
            throw error
        }
        await watcher.stop()
    }

    /// A characteristic whose value comes from an MQTT topic belongs to that topic, even where a
    /// central may write it: its `/set` is refused with the reason on the error topic.
    @Test func setOnAnMQTTSourcedCharacteristicIsRefusedWithTheReason() async throws {
        let config = """
            device: {name: setsrc}
            services:
              - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0005
                name: weather
                characteristics:
                  - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0005
                    name: outside
                    format: sint16
                    source: {mqtt: weather/outside}
                    properties: [read, write, notify]
                    permissions: {write: open}
            mqtt: {url: mqtt://127.0.0.1:1}  # the rig's --mqtt names its broker
            """
        let rig = try await GatewayRig(config: config, advertisedName: "setsrc", broker: true)
        defer { rig.stop() }
        let broker = try #require(rig.broker)
        let watcher = try MQTTWatcher(port: broker.port, filter: "gattway/setsrc/#")
        do {
            #expect(await watcher.first { $0.topic == "gattway/setsrc/state" } != nil, "the mirror is up")
            let mark = watcher.count
            try watcher.publish("gattway/setsrc/weather/outside/set", "30")
            let error = try #require(
                await watcher.first(after: mark) { $0.topic == "gattway/setsrc/error" },
                "the refusal on the error topic:\n\(rig.log)")
            #expect(
                error.text?.hasPrefix(
                    #"{"topic":"gattway/setsrc/weather/outside/set","reason":"weather/outside takes its value from MQTT topic weather/outside: publish there, not to /set""#
                ) == true, "\(error.text ?? "")")
            #expect(!watcher.messages.dropFirst(mark).contains { $0.topic == "gattway/setsrc/weather/outside" }, "no value")
        } catch {
            await watcher.stop()
            throw error
        }
        await watcher.stop()
    }
}
