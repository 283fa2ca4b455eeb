import BluetoothCore
import BluetoothGATT
import Foundation
import Notify
import StateFile
import TestHarness
import Testing
import Values

@testable import Gateway

/// The ESS trigger descriptors of a notifying Environmental Sensing measurement, over ATT: exact
/// PDUs in and out, and what a written trigger changes in the notifications (manual clock).
@Suite(.timeLimit(.minutes(1)))
struct TriggerDescriptorTests {
    static let yaml = """
        device: {name: triggers}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DHT
        sensors:
          - id: climate
            kind: dht22
            line: DHT
        services:
          - uuid: 181A
            name: environment
            characteristics:
              - uuid: 2A6E
                name: temperature
                source: {sensor: climate, reading: temperature}
                notify: {min_interval: 250ms}
              - uuid: 2A6F
                name: humidity
                properties: [read]
                source: {sensor: climate, reading: humidity}
        """

    static let encrypted = LinkSecurity(isEncrypted: true, encryptionKeySize: 16)
    let alice = CentralID(1)
    let bob = CentralID(2)

    /// Handles of the temperature's descriptors: CCCD, User Description, Presentation Format,
    /// ES Measurement, then the two ES Trigger Settings and the ES Configuration.
    struct Handles {
        let value: UInt16
        var cccd: UInt16 { value + 1 }
        var firstSetting: UInt16 { value + 5 }
        var secondSetting: UInt16 { value + 6 }
        var configuration: UInt16 { value + 7 }
    }

    func handles(_ fixture: PipelineFixture) async -> Handles {
        Handles(value: await fixture.characteristic("environment/temperature").valueHandle)
    }

    @Test func discoveryListsTheTriggerDescriptorsAfterTheOthers() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let h = await handles(fixture)
        await fixture.peripheral.centralConnected(alice)
        await fixture.peripheral.receive([0x04] + le(h.firstSetting) + le(h.configuration), from: alice)
        #expect(
            fixture.link.take(alice) == [
                [0x05, 0x01] + le(h.firstSetting) + [0x0D, 0x29]
                    + le(h.secondSetting) + [0x0D, 0x29] + le(h.configuration) + [0x0B, 0x29]
            ])
        // A characteristic that does not notify has none: just its User Description, Presentation
        // Format and ES Measurement (it is the database's last characteristic).
        let humidity = await fixture.characteristic("environment/humidity")
        await fixture.peripheral.receive([0x04] + le(humidity.valueHandle + 1) + [0xFF, 0xFF], from: alice)
        let found = try #require(fixture.link.take(alice).first)
        #expect(found.count == 2 + 3 * 4, "exactly three descriptors: \(found)")
    }

    /// Request → exact answer, in order, on one encrypted central (ESS error codes 0x80 and 0x81).
    @Test func writesAreCheckedAndReadBack() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let h = await handles(fixture)
        await fixture.peripheral.centralConnected(alice, security: Self.encrypted)
        let error = { (handle: UInt16, code: UInt8) -> [UInt8] in [0x01, 0x12] + le(handle) + [code] }
        let steps: [(String, [UInt8], [UInt8]?)] = [
            ("the first setting reads value changed before any write", [0x0A] + le(h.firstSetting), [0x0B, 0x03]),
            ("the second reads inactive", [0x0A] + le(h.secondSetting), [0x0B, 0x00]),
            ("the configuration reads AND", [0x0A] + le(h.configuration), [0x0B, 0x00]),
            ("greater than 25.00 °C (sint16, exponent -2)", [0x12] + le(h.firstSetting) + [0x06, 0xC4, 0x09], [0x13]),
            ("read back", [0x0A] + le(h.firstSetting), [0x0B, 0x06, 0xC4, 0x09]),
            ("no less than 2 s", [0x12] + le(h.secondSetting) + [0x02, 0x02, 0x00, 0x00], [0x13]),
            ("read back", [0x0A] + le(h.secondSetting), [0x0B, 0x02, 0x02, 0x00, 0x00]),
            ("an RFU condition: condition not supported", [0x12] + le(h.firstSetting) + [0x0A], error(h.firstSetting, 0x81)),
            ("condition 0xFF: condition not supported", [0x12] + le(h.firstSetting) + [0xFF, 0x00], error(h.firstSetting, 0x81)),
            ("empty: write request rejected", [0x12] + le(h.firstSetting), error(h.firstSetting, 0x80)),
            ("a zero interval: rejected", [0x12] + le(h.firstSetting) + [0x01, 0x00, 0x00, 0x00], error(h.firstSetting, 0x80)),
            ("an interval of two bytes: rejected", [0x12] + le(h.firstSetting) + [0x01, 0x05, 0x00], error(h.firstSetting, 0x80)),
            ("value changed with an operand: rejected", [0x12] + le(h.firstSetting) + [0x03, 0x00], error(h.firstSetting, 0x80)),
            ("a reference of the wrong length: rejected", [0x12] + le(h.firstSetting) + [0x04, 0xC4], error(h.firstSetting, 0x80)),
            ("refused writes changed nothing", [0x0A] + le(h.firstSetting), [0x0B, 0x06, 0xC4, 0x09]),
            ("configuration 0x02 is RFU: rejected", [0x12] + le(h.configuration) + [0x02], error(h.configuration, 0x80)),
            ("configuration of two bytes: rejected", [0x12] + le(h.configuration) + [0x01, 0x00], error(h.configuration, 0x80)),
            ("OR", [0x12] + le(h.configuration) + [0x01], [0x13]),
            ("read back", [0x0A] + le(h.configuration), [0x0B, 0x01]),
            ("a Write Command is not answered and not applied", [0x52] + le(h.configuration) + [0x00], nil),
            ("still OR", [0x0A] + le(h.configuration), [0x0B, 0x01])
        ]
        for (name, request, answer) in steps {
            await fixture.peripheral.receive(request, from: alice)
            #expect(fixture.link.take(alice) == (answer.map { [$0] } ?? []), "\(name)")
        }
        // ESS: writable trigger settings need bonding; an unencrypted link is refused by ATT.
        await fixture.peripheral.centralConnected(bob)
        await fixture.peripheral.receive([0x12] + le(h.firstSetting) + [0x03], from: bob)
        #expect(fixture.link.take(bob) == [error(h.firstSetting, 0x0F)])
        // The setting is the server's: bob reads what alice wrote.
        await fixture.peripheral.receive([0x0A] + le(h.firstSetting), from: bob)
        #expect(fixture.link.take(bob) == [[0x0B, 0x06, 0xC4, 0x09]])
    }

    /// A trigger written over ATT changes what gets notified, for the writer and for every other
    /// subscriber, including one that subscribes later. On the loop: it reads the pipeline's
    /// trigger settings (loop-bound) directly.
    @Test(.onTheLoop) func aWrittenTriggerGovernsTheNotifications() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let h = await handles(fixture)
        let path = "environment/temperature"
        await fixture.peripheral.transmitRoomFreed(100)
        await fixture.peripheral.centralConnected(alice, security: Self.encrypted)
        await fixture.subscribe(alice, to: path)

        // Before any write the policy sends every value (no faster than 250 ms).
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 20))
        #expect(await fixture.notifications(alice, on: path) == [sint16(2000)])

        // "Greater than 25.00 °C".
        await fixture.peripheral.receive([0x12] + le(h.firstSetting) + [0x06, 0xC4, 0x09], from: alice)
        #expect(fixture.link.take(alice) == [[0x13]])
        // In force for the notify driver once the write is answered, in the same call.
        let ref = fixture.ref(path)
        #expect(
            await fixture.pipeline.triggers.triggerSet(of: ref)
                == TriggerSet([.compare(.greaterThan, reference: .number(25)), .inactive]))

        var received: [[UInt8]] = []
        for value in [21.0, 26, 24, 30] {
            await fixture.advance(by: .seconds(1))
            await fixture.pipeline.sensorValue(reading("climate", "temperature", value))
            received += await fixture.notifications(alice, on: path)
        }
        #expect(received == [sint16(2600), sint16(3000)])

        // Bob subscribes later and gets the server's triggers too; they admit the current value
        // (30 °C), which he gets at once.
        #expect(await fixture.subscribe(bob, to: path) == [sint16(3000)])
        for value in [22.0, 27] {
            await fixture.advance(by: .seconds(1))
            await fixture.pipeline.sensorValue(reading("climate", "temperature", value))
        }
        #expect(await fixture.notifications(alice, on: path) == [sint16(2700)])
        #expect(await fixture.notifications(bob, on: path) == [sint16(2700)])

        // "Less than 0 °C" OR "greater than 25 °C".
        await fixture.peripheral.receive([0x12] + le(h.secondSetting) + [0x04, 0x00, 0x00], from: alice)
        await fixture.peripheral.receive([0x12] + le(h.configuration) + [0x01], from: alice)
        #expect(fixture.link.take(alice) == [[0x13], [0x13]])
        #expect(
            await fixture.pipeline.triggers.triggerSet(of: ref)
                == TriggerSet(
                    [
                        .compare(.greaterThan, reference: .number(25)),
                        .compare(.lessThan, reference: .number(0))
                    ], logic: .or))
        received = []
        for value in [-1.0, 10, 28] {
            await fixture.advance(by: .seconds(1))
            await fixture.pipeline.sensorValue(reading("climate", "temperature", value))
            received += await fixture.notifications(bob, on: path)
        }
        #expect(received == [sint16(-100), sint16(2800)])
    }

    /// The server's triggers judge the current value a new subscriber would get at once: refused
    /// while they do not hold.
    @Test func theTriggersJudgeTheCurrentValueOnSubscribe() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let h = await handles(fixture)
        let path = "environment/temperature"
        await fixture.peripheral.transmitRoomFreed(100)
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 20))
        // "Greater than 25.00 °C", written by alice on an encrypted link before anyone subscribes.
        await fixture.peripheral.centralConnected(alice, security: Self.encrypted)
        await fixture.peripheral.receive([0x12] + le(h.firstSetting) + [0x06, 0xC4, 0x09], from: alice)
        #expect(fixture.link.take(alice) == [[0x13]])

        #expect(await fixture.subscribe(bob, to: path).isEmpty, "20 °C is not above 25 °C")
        await fixture.advance(by: .seconds(1))
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 26))
        #expect(await fixture.notifications(bob, on: path) == [sint16(2600)])
        #expect(await fixture.subscribe(alice, to: path) == [sint16(2600)])
    }

    // MARK: Kept across restarts

    /// Writes the trigger files; a test waits for it (`idle`) before it reads one.
    let writer = StateFileWriter()

    /// Triggers written before a restart govern after it: the descriptors read what was written
    /// and the notifications follow them, with nothing written again.
    @Test func writtenTriggersAreKeptAcrossARestart() async throws {
        let state = try temporaryDirectory("triggers").path
        let file = TriggerFile(stateDirectory: state, writer: writer)
        let path = "environment/temperature"
        do {
            let fixture = try await PipelineFixture(yaml: Self.yaml, triggerFile: file)
            let h = await handles(fixture)
            await fixture.peripheral.centralConnected(alice, security: Self.encrypted)
            // "Greater than 25.00 °C" OR "less than 0 °C".
            for write in [
                [0x12] + le(h.firstSetting) + [0x06, 0xC4, 0x09], [0x12] + le(h.secondSetting) + [0x04, 0x00, 0x00],
                [0x12] + le(h.configuration) + [0x01]
            ] {
                await fixture.peripheral.receive(write, from: alice)
            }
            #expect(fixture.link.take(alice) == [[0x13], [0x13], [0x13]])
            await fixture.finish()
        }
        await writer.idle()
        #expect(
            try file.load() == [
                path: SavedTriggers(uuid: "2A6E", format: "sint16 e-2", settings: ["06c409", "040000"], configuration: "01")
            ])

        let fixture = try await PipelineFixture(yaml: Self.yaml, triggerFile: file)
        let h = await handles(fixture)
        await fixture.peripheral.centralConnected(bob, security: Self.encrypted)
        let written: [(UInt16, [UInt8])] = [
            (h.firstSetting, [0x06, 0xC4, 0x09]), (h.secondSetting, [0x04, 0x00, 0x00]), (h.configuration, [0x01])
        ]
        for (handle, value) in written {
            await fixture.peripheral.receive([0x0A] + le(handle), from: bob)
            #expect(fixture.link.take(bob) == [[0x0B] + value], "handle \(handle)")
        }
        await fixture.peripheral.transmitRoomFreed(100)
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 20))
        #expect(await fixture.subscribe(bob, to: path).isEmpty, "20 °C is neither above 25 °C nor below 0 °C")
        var received: [[UInt8]] = []
        for value in [26.0, 10, -2] {
            await fixture.advance(by: .seconds(1))
            await fixture.pipeline.sensorValue(reading("climate", "temperature", value))
            received += await fixture.notifications(bob, on: path)
        }
        #expect(received == [sint16(2600), sint16(-200)])
        #expect(fixture.warnings.all.isEmpty, "\(fixture.warnings.all)")
    }

    /// Settings saved for a characteristic whose format has changed since (its reference values
    /// meant something else) are forgotten with a warning naming it, and the file is written
    /// without them; the configured policy governs.
    @Test func savedTriggersOfAnotherFormatAreForgotten() async throws {
        let file = TriggerFile(stateDirectory: try temporaryDirectory("triggers").path, writer: writer)
        file.save([
            "environment/temperature": SavedTriggers(
                uuid: "2A6E", format: "uint8", settings: ["0619", "00"], configuration: "00")
        ]) { #expect($0 == nil) }
        await writer.idle()
        let fixture = try await PipelineFixture(yaml: Self.yaml, triggerFile: file)
        let h = await handles(fixture)
        await fixture.peripheral.centralConnected(alice)
        await fixture.peripheral.receive([0x0A] + le(h.firstSetting), from: alice)
        #expect(fixture.link.take(alice) == [[0x0B, 0x03]], "value changed, the policy's")
        #expect(
            fixture.warnings.all == [
                "<4>test: saved notify triggers forgotten: environment/temperature: written for 2A6E in uint8, not for "
                    + "this characteristic; the configured policy governs\n"
            ])
        await writer.idle()
        #expect(try file.load().isEmpty)
    }

    /// A trigger file that cannot be read is named in a warning; the configured policies govern
    /// and the next write replaces it.
    @Test func aBrokenTriggerFileIsNamedAndReplacedByTheNextWrite() async throws {
        let state = try temporaryDirectory("triggers").path
        let file = TriggerFile(stateDirectory: state, writer: writer)
        try "{ not json".write(toFile: file.path, atomically: true, encoding: .utf8)
        let fixture = try await PipelineFixture(yaml: Self.yaml, triggerFile: file)
        #expect(fixture.warnings.all.count == 1)
        #expect(
            fixture.warnings.all.first?.hasPrefix("<4>test: \(file.path) is not a trigger file (") == true,
            "\(fixture.warnings.all)")
        #expect(
            fixture.warnings.all.first?.hasSuffix(
                "): the trigger settings written before are forgotten, the configured policies govern\n") == true)
        let h = await handles(fixture)
        await fixture.peripheral.centralConnected(alice, security: Self.encrypted)
        await fixture.peripheral.receive([0x12] + le(h.configuration) + [0x01], from: alice)
        await writer.idle()
        #expect(try file.load()["environment/temperature"]?.configuration == "01")
    }
}
