import BluetoothCore
import Config
import Foundation
import Logging
import Notify
import StateFile
import TestHarness
import Testing
import Values

@testable import BluetoothGATT
@testable import Gateway

/// The trigger settings stage on its own, behind the GATT server's request handlers as the
/// gateway publishes them: what a central writes is what the notify driver is handed and what a
/// restart restores; a batch refused in part changes nothing; a reload keeps only the settings of
/// the characteristics it keeps.
@Suite(.timeLimit(.minutes(1)), .onTheLoop)
struct TriggerSettingsTests {
    /// One published gateway: its store of values, its trigger settings, and the temperature's
    /// trigger descriptors as the server names them in requests.
    struct Published {
        let layout: GATTLayout
        let values: CharacteristicValues
        let triggers: TriggerSettings
        let temperature: PublishedCharacteristic
        let settings: [PublishedDescriptor]
        let configuration: PublishedDescriptor
        var handlers: GATTRequestHandlers { values.handlers(triggers: triggers, applied: {}) }

        init(file: TriggerFile?) async throws {
            layout = GATTLayout(config: try ConfigLoader.load(yaml: TriggerDescriptorTests.yaml).config)
            values = CharacteristicValues(layout: layout, logger: Logger(label: "test"))
            triggers = TriggerSettings(layout: layout, file: file, logger: Logger(label: "test"))
            let peripheral = Peripheral(configuration: .init(deviceName: "triggers"), link: RecordingLink())
            await peripheral.updateState(.poweredOn)
            let publication = GATTPublication()
            try publication.publish(
                layout, on: peripheral, values: values, triggers: triggers, logger: Logger(label: "test"))
            let temperature = try #require(publication.characteristics[layout.ref("environment/temperature")!])
            self.temperature = temperature
            let service = try layout.service(0) { _ in nil }
            let first = try #require(
                service.characteristics[0].descriptors.firstIndex { $0.uuid == ESTriggerSetting.descriptorUUID })
            // The value handle, its CCCD and the static descriptors before the trigger descriptors.
            let firstHandle = temperature.valueHandle + 2 + UInt16(first)
            settings = (0..<2).map { index in
                PublishedDescriptor(
                    characteristic: temperature, uuid: ESTriggerSetting.descriptorUUID,
                    handle: firstHandle + UInt16(index), position: first + index)
            }
            configuration = PublishedDescriptor(
                characteristic: temperature, uuid: TriggerLogic.descriptorUUID, handle: firstHandle + 2,
                position: first + 2)
        }

        var ref: CharacteristicRef { layout.ref("environment/temperature")! }

        func write(_ descriptor: PublishedDescriptor?, _ value: [UInt8]) -> GATTWriteRequest {
            GATTWriteRequest(
                central: CentralID(1), characteristic: temperature, offset: 0, value: value, kind: .request,
                descriptor: descriptor)
        }

        func read(_ descriptor: PublishedDescriptor) -> [UInt8]? {
            try? handlers.read(
                GATTReadRequest(central: CentralID(1), characteristic: temperature, offset: 0, descriptor: descriptor)
            ).get()
        }
    }

    /// "Greater than 25.00 °C" OR "less than 0 °C".
    static let written: [UInt8] = [0x06, 0xC4, 0x09]
    static let secondWritten: [UInt8] = [0x04, 0x00, 0x00]
    static let expected = TriggerSet(
        [.compare(.greaterThan, reference: .number(25)), .compare(.lessThan, reference: .number(0))], logic: .or)

    let writer = StateFileWriter()

    @Test func writtenSettingsGoToTheDriverAndSurviveARestart() async throws {
        let file = TriggerFile(stateDirectory: try temporaryDirectory("trigger-settings").path, writer: writer)
        do {
            let gateway = try await Published(file: file)
            #expect(gateway.triggers.triggerSet(of: gateway.ref) == nil, "the configured policy governs at first")
            let batch = [
                gateway.write(gateway.settings[0], Self.written), gateway.write(gateway.settings[1], Self.secondWritten),
                gateway.write(gateway.configuration, [0x01])
            ]
            #expect(gateway.handlers.write(batch) == nil)
            #expect(gateway.triggers.triggerSet(of: gateway.ref) == Self.expected)
            #expect(gateway.triggers.takeChanges() == [TriggerChange(ref: gateway.ref, central: CentralID(1), triggers: Self.expected)])
            #expect(gateway.triggers.takeChanges().isEmpty, "each change is taken once")
        }
        await writer.idle()

        let restarted = try await Published(file: file)
        #expect(restarted.triggers.triggerSet(of: restarted.ref) == Self.expected)
        #expect(restarted.read(restarted.settings[0]) == Self.written)
        #expect(restarted.read(restarted.settings[1]) == Self.secondWritten)
        #expect(restarted.read(restarted.configuration) == [0x01])
    }

    /// A batch whose value part is refused applies none of its trigger descriptor writes either:
    /// nothing changes, nothing is handed on, nothing is saved.
    @Test func aBatchRefusedInPartChangesNoSetting() async throws {
        let file = TriggerFile(stateDirectory: try temporaryDirectory("trigger-settings").path, writer: writer)
        let gateway = try await Published(file: file)
        let batch = [gateway.write(gateway.configuration, [0x01]), gateway.write(nil, [0x01, 0x02, 0x03])]
        #expect(gateway.handlers.write(batch) == .invalidAttributeValueLength)
        #expect(gateway.triggers.triggerSet(of: gateway.ref) == nil)
        #expect(gateway.read(gateway.configuration) == [0x00])
        await writer.idle()
        #expect(try file.load().isEmpty)
        #expect(gateway.handlers.write([gateway.write(gateway.configuration, [0x07])]) != nil)
        #expect(gateway.triggers.triggerSet(of: gateway.ref) == nil, "an ES Configuration of 0x07 is refused")
    }

    /// A reload keeps the settings of the characteristics it keeps, and forgets the others'.
    @Test func aReloadKeepsOnlyTheKeptCharacteristicsSettings() async throws {
        let gateway = try await Published(file: nil)
        #expect(gateway.handlers.write([gateway.write(gateway.configuration, [0x01])]) == nil)
        let set = try #require(gateway.triggers.triggerSet(of: gateway.ref))
        gateway.triggers.relayout(gateway.layout, keeping: [gateway.ref])
        #expect(gateway.triggers.triggerSet(of: gateway.ref) == set)
        gateway.triggers.relayout(gateway.layout, keeping: [])
        #expect(gateway.triggers.triggerSet(of: gateway.ref) == nil)
        #expect(gateway.read(gateway.configuration) == nil, "not published again yet")
    }
}
