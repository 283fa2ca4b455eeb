import BluetoothCore
import TestHarness
import Testing

/// `notify.on_subscribe` through the `gattway` executable, against a Bumble phone: a door contact
/// that never moves (its simulated line is held high) and a relay only the phone's writes change.
@Suite(.serialized, .timeLimit(.minutes(2)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct CurrentValueOnSubscribeEndToEndTests {
    static let door = "6E400002-B5A3-F393-E0A9-E50E24DC0001"
    static let relay = "6E400003-B5A3-F393-E0A9-E50E24DC0001"

    /// `notify` is added to both characteristics (empty: the defaults).
    static func config(name: String, notify: String) -> String {
        """
        device: {name: \(name)}
        bluetooth:
          advertising: {interval: 20ms}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DOOR
                  generator: {type: constant, level: 1}
                - name: RELAY
        sensors:
          - {id: door, kind: binary, line: DOOR}
          - {id: relay, kind: output, line: RELAY}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: \(door)
                name: door
                format: bool
                source: {sensor: door}
                \(notify)
              - uuid: \(relay)
                name: relay
                format: bool
                source: {sensor: relay}
                permissions: {write: open}
                \(notify)
        """
    }

    /// The phone, connected, with the value handles of the door and the relay.
    static func connectedPhone(_ rig: GatewayRig) async throws -> (phone: Phone, door: Int, relay: Int) {
        let (phone, _) = try await rig.connectedPhone()
        let door = try await phone.valueHandle(of: Self.door)
        let relay = try await phone.valueHandle(of: Self.relay)
        return (phone, door, relay)
    }

    static func values(_ reply: PhoneReply) -> [[UInt8]] {
        (reply["values"] as? [[String: Any]] ?? []).compactMap { ($0["value"] as? String).flatMap { [UInt8](hexString: $0) } }
    }

    /// By default (sensor sources) the phone gets each characteristic's current value right after
    /// it subscribes: the door's, which will never change, and the relay's as its earlier write
    /// left it (on, not the initial off). Exactly one each: nothing follows an unchanged value.
    @Test func aPhoneGetsTheCurrentValueAtOnceWhenItSubscribes() async throws {
        let rig = try await GatewayRig(config: Self.config(name: "subscribe-on", notify: ""), advertisedName: "subscribe-on")
        defer { rig.stop() }
        let (phone, door, relay) = try await Self.connectedPhone(rig)
        try await phone.expect("write", ["handle": relay, "value": "01"])

        try await phone.expect("subscribe", ["handle": door])
        let start = ContinuousClock.now
        let first = Self.values(try await phone.expect("notifications", ["count": 1, "timeout": 2, "handle": door]))
        print("the door's current value arrived \(ContinuousClock.now - start) after the subscription")
        #expect(first == [[0x01]])
        try await phone.expect("subscribe", ["handle": relay])
        let relayValues = Self.values(try await phone.expect("notifications", ["count": 1, "timeout": 2, "handle": relay]))
        #expect(relayValues == [[0x01]])
        let more = Self.values(try await phone.expect("notifications", ["count": 1, "timeout": 1]))
        #expect(more.isEmpty, "nothing after the current values: \(more)")
    }

    /// `on_subscribe: false`: the phone gets nothing at the subscription, and the relay's value
    /// once the phone's write changes it.
    @Test func withOnSubscribeOffNothingArrivesUntilTheValueChanges() async throws {
        let rig = try await GatewayRig(
            config: Self.config(name: "subscribe-off", notify: "notify: {on_subscribe: false}"),
            advertisedName: "subscribe-off")
        defer { rig.stop() }
        let (phone, door, relay) = try await Self.connectedPhone(rig)
        try await phone.expect("subscribe", ["handle": door])
        try await phone.expect("subscribe", ["handle": relay])
        let quiet = Self.values(try await phone.expect("notifications", ["count": 1, "timeout": 2]))
        #expect(quiet.isEmpty, "nothing at the subscription: \(quiet)")

        try await phone.expect("write", ["handle": relay, "value": "01"])
        let changed = Self.values(try await phone.expect("notifications", ["count": 1, "timeout": 5, "handle": relay]))
        #expect(changed == [[0x01]])
    }
}
