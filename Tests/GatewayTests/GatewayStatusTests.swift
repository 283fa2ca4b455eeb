import Testing

@testable import Gateway

/// `gattway status`'s text: one line per fact, the MQTT mirror's last.
struct GatewayStatusTests {
    static func status(mqtt: GatewayStatus.MQTT?) -> GatewayStatus {
        GatewayStatus(
            controller: "hci0", state: "poweredOn", advertising: true,
            centrals: [
                .init(
                    address: "C0:11:22:33:44:55", mtu: 247, security: "encrypted", bonded: true,
                    subscriptions: ["env/temperature notify"])
            ],
            sensors: [
                .init(id: "temperature", values: [.init(characteristic: "env/temperature", value: "21.5")]),
                .init(id: "door", values: [.init(characteristic: "door/open", value: nil)])
            ],
            counters: ["sent": 12, "coalesced": 3], mqtt: mqtt)
    }

    @Test func theTextHasALinePerFact() {
        #expect(
            Self.status(mqtt: nil).text == """
                controller hci0: poweredOn, advertising
                1 connected:
                  C0:11:22:33:44:55 MTU 247, security encrypted, bonded; env/temperature notify
                sensors:
                  temperature: env/temperature = 21.5
                  door: door/open = no value yet
                counters: sent 12, coalesced 3, suppressed 0, dropped 0, waiting 0, lost_events 0
                mqtt off
                """)
    }

    @Test(arguments: [
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "connected", error: nil, behind: false, held: 0, outbox: 0,
                dropped: 0, refused: 0),
            "mqtt mqtt://broker.lan:1883: connected; outbox 0 waiting"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtts://broker.lan:8883", state: "connecting", error: "connection refused", behind: false,
                held: 0, outbox: 12, dropped: 0, refused: 0),
            "mqtt mqtts://broker.lan:8883: connecting (connection refused); outbox 12 waiting"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "connected", error: nil, behind: true, held: 3, outbox: 1,
                dropped: 0, refused: 0),
            "mqtt mqtt://broker.lan:1883: connected, behind: 3 messages held back (the newest of each topic); outbox 1 waiting"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "connecting", error: "connection lost", behind: false, held: 0,
                outbox: 10_000, dropped: 25, refused: 0),
            "mqtt mqtt://broker.lan:1883: connecting (connection lost); outbox 10000 waiting, 25 dropped (full)"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "connected", error: nil, behind: false, held: 0, outbox: 0,
                dropped: 0, refused: 2),
            "mqtt mqtt://broker.lan:1883: connected; outbox 0 waiting, 2 refused by the broker (on error)"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "off", error: "cannot read /var/lib/gattway/x", behind: false,
                held: 0, outbox: 3, dropped: 0, refused: 0),
            "mqtt mqtt://broker.lan:1883: off (cannot read /var/lib/gattway/x); outbox 3 waiting"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "off", error: nil, behind: false, held: 0, outbox: 0, dropped: 0, refused: 0),
            "mqtt mqtt://broker.lan:1883: off"
        ),
        (
            GatewayStatus.MQTT(
                broker: "mqtt://broker.lan:1883", state: "off", error: "cannot read /var/lib/gattway/x", behind: false,
                held: 0, outbox: 0, dropped: 0, refused: 0),
            "mqtt mqtt://broker.lan:1883: off (cannot read /var/lib/gattway/x)"
        )
    ])
    func theMirrorsLineSaysHowItIsDoing(_ mqtt: GatewayStatus.MQTT, _ line: String) {
        #expect(mqtt.text == line)
        #expect(Self.status(mqtt: mqtt).text.hasSuffix("\n" + line))
    }

    /// `--json` carries the same facts, the mirror under `mqtt`, absent without an `mqtt` section.
    @Test func theJSONCarriesTheMirror() throws {
        let mqtt = GatewayStatus.MQTT(
            broker: "mqtt://broker.lan:1883", state: "connecting", error: "connection refused", behind: false, held: 0,
            outbox: 2, dropped: 0, refused: 0)
        let line = String(decoding: ControlLine.encode(Self.status(mqtt: mqtt)), as: UTF8.self)
        #expect(
            line.contains(
                #""mqtt":{"behind":false,"broker":"mqtt://broker.lan:1883","dropped":0,"error":"connection refused","held":0,"outbox":2,"refused":0,"state":"connecting"}"#
            ), "\(line)")
        #expect(try ControlLine.decode(GatewayStatus.self, from: Array(line.utf8.dropLast())) == Self.status(mqtt: mqtt))
        #expect(!String(decoding: ControlLine.encode(Self.status(mqtt: nil)), as: UTF8.self).contains("mqtt"))
    }
}
