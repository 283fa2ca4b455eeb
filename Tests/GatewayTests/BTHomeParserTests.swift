import BluetoothCore
import TestHarness
import Testing
import Values

/// The BTHome codec against bthome-ble, the parser of Home Assistant's BTHome integration: each
/// button event, in the clear and encrypted with a bind key, fires the event Home Assistant
/// shows (none fires nothing).
@Suite(.disabled(if: integrationTestsStandAside, unitOnlyReason))
struct BTHomeParserTests {
    static let address = "54:48:E6:8F:80:A5"
    static let key = "231d39c1d7cc1ab1aee224cd096db932"
    static let events: [(BTHomeButtonEvent, String?)] = [
        (.press, "press"), (.doublePress, "double_press"), (.triplePress, "triple_press"),
        (.longPress, "long_press"), (.longDoublePress, "long_double_press"),
        (.longTriplePress, "long_triple_press"), (.holdPress, "hold_press"), (.holdRelease, "hold_release"),
        (.none, nil)
    ]

    @Test(arguments: [false, true])
    func buttonEventsFireTheirHomeAssistantEvents(encrypted: Bool) async throws {
        let key = try #require(BTHomeKey(hex: Self.key))
        let address = try #require(BluetoothAddress(Self.address))
        // One packet per event, with consecutive packet ids (and counters), as gattway sends them.
        let packets = try Self.events.enumerated().map { index, event in
            try BTHome.serviceData(
                [BTHomeMeasurement(button: event.0)], packetID: UInt8(index + 1),
                encryption: encrypted ? BTHomeEncryption(key: key, address: address, counter: UInt32(index + 1)) : nil)
        }
        let decoded = try await BTHomeScanner.decode(packets, address: Self.address, bindKey: encrypted ? Self.key : nil)
        try #require(decoded.count == packets.count)
        for ((event, name), packet) in zip(Self.events, decoded) {
            #expect(packet.accepted, "\(event): \(packet)")
            #expect(packet.encrypted == encrypted && (!encrypted || packet.bindKeyVerified), "\(event): \(packet)")
            #expect(packet.events["button"] == name, "\(event): \(packet)")
        }
    }
}
