import BluetoothCore
import BluetoothGATT
import Config
import Logging
import Notify
import TestHarness
import Testing
import Values

@testable import Gateway

/// `GATTPublication` on an in-memory peripheral: which published characteristic a configured one
/// is and back, the value handles the value store learns, and what a reload's layout does to them.
@Suite(.timeLimit(.minutes(1)), .onTheLoop)
struct GATTPublicationTests {
    let layout: GATTLayout
    let values: CharacteristicValues
    let triggers: TriggerSettings
    let peripheral: Peripheral
    let publication = GATTPublication()
    let alice = CentralID(1)
    static let gatewayService = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DC0001")!

    init() async throws {
        layout = try Self.layout(ValuePipelineTests.yaml)
        values = CharacteristicValues(layout: layout, logger: Logger(label: "test"))
        triggers = TriggerSettings(layout: layout, file: nil, logger: Logger(label: "test"))
        peripheral = Peripheral(configuration: .init(deviceName: "publication"), link: RecordingLink())
        await peripheral.updateState(.poweredOn)
    }

    static func layout(_ yaml: String) throws -> GATTLayout { GATTLayout(config: try ConfigLoader.load(yaml: yaml).config) }

    func ref(_ path: String, in layout: GATTLayout? = nil) -> CharacteristicRef { (layout ?? self.layout).ref(path)! }

    /// The peripheral's published service with `uuid`, as a central would discover it.
    func published(_ uuid: BluetoothUUID) async throws -> PublishedService {
        try #require(await peripheral.services.first { $0.uuid == uuid })
    }

    /// What a central's read of `characteristic` gets from the value store; nil when refused.
    func read(_ characteristic: PublishedCharacteristic) -> [UInt8]? {
        try? values.handlers(triggers: triggers, applied: {}).read(
            GATTReadRequest(central: alice, characteristic: characteristic, offset: 0)
        ).get()
    }

    func publish() async throws {
        try publication.publish(layout, on: peripheral, values: values, triggers: triggers, logger: Logger(label: "test"))
    }

    @Test func eachConfiguredCharacteristicIsThePublishedOneAtItsPositionAndBack() async throws {
        #expect(publication.services == nil, "nothing published yet")
        try await publish()
        let environment = try await published(BluetoothUUID(0x181A))
        let gateway = try await published(Self.gatewayService)
        #expect(publication.services?.map(\.index) == [0, 1])
        #expect(publication.services?.map(\.published) == [environment, gateway])
        #expect(publication.services?.map(\.refs) == [[ref("environment/temperature")], [ref("gateway/relay"), ref("gateway/label")]])
        let expected = [
            ref("environment/temperature"): environment.characteristics[0],
            ref("gateway/relay"): gateway.characteristics[0],
            ref("gateway/label"): gateway.characteristics[1]
        ]
        #expect(publication.characteristics.entries == expected)
        for (ref, characteristic) in expected { #expect(publication.ref(of: characteristic) == ref) }

        // The value store serves each characteristic's own value at its value handle.
        values.set(
            CharacteristicValuesTests.sample([0x66, 0x08], of: ref("environment/temperature"), in: layout),
            of: ref("environment/temperature"))
        values.set(CharacteristicValuesTests.sample([0x01], of: ref("gateway/relay"), in: layout), of: ref("gateway/relay"))
        values.set(CharacteristicValuesTests.sample(Array("hi".utf8), of: ref("gateway/label"), in: layout), of: ref("gateway/label"))
        #expect(expected.keys.sorted().map { read(expected[$0]!) } == [[0x66, 0x08], [0x01], Array("hi".utf8)])
    }

    /// A reload that adds a characteristic to `gateway` and a service `extra`: `environment` stays
    /// as it was published; `gateway` is removed and published anew, with `extra` after it; the
    /// characteristics of the old `gateway` are no longer ours, and the value store serves the new
    /// ones (values kept for the kept characteristic only). The new `gateway` takes the old one's
    /// handles (first fit): a characteristic is ours as it was published, not by its handle.
    @Test func aLayoutChangeReplacesTheChangedServicesAndKeepsTheOthers() async throws {
        try await publish()
        values.set(
            CharacteristicValuesTests.sample([0x66, 0x08], of: ref("environment/temperature"), in: layout),
            of: ref("environment/temperature"))
        let temperature = try #require(publication.characteristics[ref("environment/temperature")])
        let oldGateway = try await published(Self.gatewayService)
        let newLayout = try Self.layout(ReloadPipelineTests.changedYAML)
        let change = try GATTLayoutChange(from: try #require(publication.services), to: newLayout)
        #expect(change.kept.map(\.index) == [0] && change.removed.map(\.index) == [1] && change.added == [1, 2])

        values.relayout(newLayout, keeping: [ref("environment/temperature")])
        try publication.change(to: newLayout, change, on: peripheral, values: values, triggers: triggers)
        let gateway = try await published(Self.gatewayService)
        let extra = try await published(BluetoothUUID("6E400010-B5A3-F393-E0A9-E50E24DC0001")!)
        #expect(gateway.id != oldGateway.id)
        #expect(await peripheral.services.contains(oldGateway) == false, "the old gateway service is removed")
        #expect(publication.services?.map(\.index) == [0, 1, 2])
        #expect(publication.services?.map(\.published).dropFirst() == [gateway, extra])
        #expect(
            publication.characteristics.entries == [
                ref("environment/temperature"): temperature,
                ref("gateway/relay"): gateway.characteristics[0],
                ref("gateway/label"): gateway.characteristics[1],
                ref("gateway/mode", in: newLayout): gateway.characteristics[2],
                ref("extra/humidity", in: newLayout): extra.characteristics[0]
            ])
        #expect(publication.ref(of: temperature) == ref("environment/temperature"))
        #expect(gateway.characteristics.prefix(2).map(\.valueHandle) == oldGateway.characteristics.map(\.valueHandle))
        for old in oldGateway.characteristics { #expect(publication.ref(of: old) == nil, "\(old)") }
        #expect(publication.ref(of: extra.characteristics[0]) == ref("extra/humidity", in: newLayout))

        #expect(read(temperature) == [0x66, 0x08], "the kept characteristic keeps its value and handle")
        values.set(
            CharacteristicValuesTests.sample([0x10, 0x27], of: ref("extra/humidity", in: newLayout), in: newLayout),
            of: ref("extra/humidity", in: newLayout))
        #expect(read(extra.characteristics[0]) == [0x10, 0x27])
        #expect(read(gateway.characteristics[1]) == [], "published anew: no value until its source gives one")
    }

    /// Back to the first layout: the service only the reload added goes, with its characteristic.
    @Test func aLayoutChangeForgetsARemovedService() async throws {
        let reloaded = try Self.layout(ReloadPipelineTests.changedYAML)
        let reloadedValues = CharacteristicValues(layout: reloaded, logger: Logger(label: "test"))
        try publication.publish(reloaded, on: peripheral, values: reloadedValues, triggers: triggers, logger: Logger(label: "test"))
        let humidity = try #require(publication.characteristics[ref("extra/humidity", in: reloaded)])
        let change = try GATTLayoutChange(from: try #require(publication.services), to: layout)
        #expect(change.kept.map(\.index) == [0] && change.removed.map(\.index) == [1, 2] && change.added == [1])
        try publication.change(to: layout, change, on: peripheral, values: reloadedValues, triggers: triggers)
        #expect(publication.characteristics[ref("extra/humidity", in: reloaded)] == nil)
        #expect(publication.ref(of: humidity) == nil)
        #expect(Set(publication.characteristics.entries.keys) == Set(layout.characteristics.keys))
        #expect(await peripheral.services.contains { $0.characteristics.contains(humidity) } == false)
    }
}
