import BluetoothGATT
import Config
import Logging
import Notify
import TestHarness
import Testing
import Values

@testable import Gateway

/// The store of current values with the publication beside it: one entry per characteristic from
/// the start, values kept across publishing, reads and writes by value handle reaching the same
/// entry the pipeline sets by characteristic.
@Suite(.timeLimit(.minutes(1)), .onTheLoop)
struct CharacteristicValuesTests {
    let layout: GATTLayout
    let values: CharacteristicValues
    let triggers: TriggerSettings
    let peripheral: Peripheral
    let publication = GATTPublication()
    let alice = CentralID(1)

    init() async throws {
        layout = GATTLayout(config: try ConfigLoader.load(yaml: ValuePipelineTests.yaml).config)
        values = CharacteristicValues(layout: layout, logger: Logger(label: "test"))
        triggers = TriggerSettings(layout: layout, file: nil, logger: Logger(label: "test"))
        peripheral = Peripheral(configuration: .init(deviceName: "store"), link: RecordingLink())
        await peripheral.updateState(.poweredOn)
    }

    func ref(_ path: String) -> CharacteristicRef { layout.ref(path)! }

    /// `bytes` as a value of `ref`, decoded in its format.
    static func sample(_ bytes: [UInt8], of ref: CharacteristicRef, in layout: GATTLayout) -> NotifySample {
        NotifySample(value: try! layout.characteristics[ref]!.config.encoding.decode(bytes), bytes: bytes)
    }

    /// What a central's read gets; nil when it is refused.
    func read(_ path: String) -> [UInt8]? {
        try? values.handlers(triggers: triggers, applied: {}).read(
            GATTReadRequest(central: alice, characteristic: publication.characteristics[ref(path)]!, offset: 0)
        ).get()
    }

    @Test func valuesSetBeforePublishingAreServedAfter() async throws {
        let temperature = ref("environment/temperature")
        #expect(values.bytes(of: temperature) == nil, "no value before the sensor's first")
        values.set(CharacteristicValuesTests.sample([0x66, 0x08], of: temperature, in: layout), of: temperature)
        try publication.publish(layout, on: peripheral, values: values, triggers: triggers, logger: Logger(label: "test"))
        #expect(read("environment/temperature") == [0x66, 0x08])
        #expect(read("gateway/label") == [], "a read before any value gets no bytes")
        values.set(CharacteristicValuesTests.sample([0x67, 0x08], of: temperature, in: layout), of: temperature)
        #expect(read("environment/temperature") == [0x67, 0x08])
        #expect(values.bytes(of: temperature) == [0x67, 0x08])
    }

    /// A central's accepted write is the current value at once, in the same entry, and goes to the
    /// pipeline as a `CentralWrite`; a refused one changes nothing. A part at an offset (a
    /// prepared write) past the current value is an Invalid Offset (Vol 3 Part F 3.4.6.3); a
    /// value longer than the characteristic's maximum is an Invalid Attribute Value Length (Vol 3
    /// Part F 3.4.5.1, 3.4.6.3); bytes its format cannot decode are a Value Not Allowed (Vol 3
    /// Part F 3.4.1.1 Table 3.4: the parameter value was not allowed).
    @Test func writesChangeTheOneEntry() async throws {
        try publication.publish(layout, on: peripheral, values: values, triggers: triggers, logger: Logger(label: "test"))
        let label = ref("gateway/label")
        let published = try #require(publication.characteristics[label])
        #expect(publication.ref(of: published) == label)
        values.set(CharacteristicValuesTests.sample(Array("hi".utf8), of: label, in: layout), of: label)
        let write = { (bytes: [UInt8], offset: Int) in
            values.handlers(triggers: triggers, applied: {}).write([
                GATTWriteRequest(central: alice, characteristic: published, offset: offset, value: bytes, kind: .request)
            ])
        }
        #expect(write(Array("ho".utf8), 1) == nil, "an offset completes the current value")
        #expect(values.bytes(of: label) == Array("hho".utf8))
        #expect(
            values.takeAcceptedWrites()
                == [CentralWrite(ref: label, central: alice, value: .text("hho"), bytes: Array("hho".utf8), kind: .request)])
        #expect(write(Array("x".utf8), 4) == .invalidOffset)
        #expect(write(Array("much too long".utf8), 0) == .invalidAttributeValueLength)
        #expect(write([0x68, 0xFF], 0) == .valueNotAllowed, "not UTF-8")
        #expect(write([0xC3], 3) == .valueNotAllowed, "a part that cuts a character in two")
        #expect(read("gateway/label") == Array("hho".utf8))
        #expect(values.takeAcceptedWrites().isEmpty, "refused writes are not handed on")
    }
}
