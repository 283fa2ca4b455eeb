import Config
import Testing

/// `bluetooth.security`'s pairing keys, the `pair_with` button, `gattway check`'s summary of them
/// and its warnings where a deployment lets strangers drive outputs.
struct PairingConfigTests {
    /// A relay a bonded phone (and MQTT `/set`) may write, and a button.
    static func yaml(security: String = "{}", mqtt: String = "") -> String {
        """
        bluetooth:
          security: \(security)
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: RELAY
                - name: BUTTON
        sensors:
          - {id: relay, kind: output, line: RELAY}
          - {id: button, kind: binary, line: BUTTON}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0031
            characteristics:
              - uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0031
                name: relay
                format: bool
                source: {sensor: relay}
        \(mqtt)
        """
    }

    @Test func pairingIsWindowedByDefault() throws {
        let loaded = try ConfigLoader.load(yaml: Self.yaml())
        let security = loaded.config.bluetooth.security
        #expect(security.pairing == .window)
        #expect(security.pairingWindow == .seconds(120) && security.firstStartWindow == .seconds(600))
        #expect(security.pairWith == nil && security.pairPress == .seconds(3))
        #expect(loaded.warnings.isEmpty, "\(loaded.warnings)")
    }

    @Test func pairingKeysAreRead() throws {
        let security = try ConfigLoader.load(
            yaml: Self.yaml(security: "{pairing_window: 90s, first_start_window: 0s, pair_with: button, pair_press: 5s}")
        ).config.bluetooth.security
        #expect(
            security
                == SecurityConfig(
                    ioCapabilities: .noInputNoOutput, passkey: nil, allowLegacy: false, pairing: .window,
                    pairingWindow: .seconds(90), firstStartWindow: .zero, pairWith: "button", pairPress: .seconds(5)))
    }

    /// `gattway check`'s summary (and the log at start-up) says who may pair and when.
    @Test func theSummaryNamesThePairingPolicy() throws {
        func summary(_ security: String) throws -> [String] {
            ConfigSummary.lines(try ConfigLoader.load(yaml: Self.yaml(security: security)).config)
                .filter { $0.hasPrefix("pairing: ") }
        }
        #expect(
            try summary("{}") == [
                "pairing: window (2m by gattway pair; 10m after a start without bonds), no_input_no_output"
            ])
        #expect(
            try summary("{pairing_window: 90s, first_start_window: 0s, pair_with: button, pair_press: 5s}") == [
                "pairing: window (90s by gattway pair or a 5s press of button; closed at a start without bonds), "
                    + "no_input_no_output"
            ])
        #expect(
            try summary("{pairing: open, io_capabilities: display_only}") == [
                "pairing: open (anyone in range may pair at any time), display_only"
            ])
    }

    @Test func aPairButtonMustBeABinarySensorOfItsOwn() {
        #expect(
            configurationErrors(Self.yaml(security: "{pair_with: relay}")) == [
                #"bluetooth.security.pair_with (line 2): sensor "relay" is a output sensor; opening the pairing window needs a binary one (a button)"#
            ])
        #expect(
            configurationErrors(Self.yaml(security: "{io_capabilities: display_yes_no, confirm_with: button, pair_with: button}"))
                .contains { $0.hasSuffix(#""button" already confirms numbers (confirm_with); give pairing its own button"#) })
        #expect(configurationErrors(Self.yaml(security: "{pairing: sometimes}")).count == 1)
        #expect(configurationErrors(Self.yaml(security: "{pairing_window: 1s}")).count == 1, "shorter than 10s")
    }

    /// Warnings, not errors: the file is valid, `gattway check` names the exposure.
    @Test func checkWarnsWhereStrangersCouldDriveTheOutputs() throws {
        let open = try ConfigLoader.load(yaml: Self.yaml(security: "{pairing: open}")).warnings.map(\.description)
        #expect(open.count == 1)
        #expect(
            open.first?.hasSuffix(
                #"pairing: open lets anyone in radio range pair and write the outputs ("relay"); the default, window, pairs only while the owner allows it (gattway pair)"#
            ) == true, "\(open)")

        let plain = try ConfigLoader.load(yaml: Self.yaml(mqtt: "mqtt: {url: mqtt://broker.lan}")).warnings.map(\.description)
        #expect(plain.count == 1)
        #expect(
            plain.first?.hasSuffix(
                "writable characteristics take MQTT /set from mqtt://broker.lan:1883 without TLS (mqtts://) or credentials "
                    + "(username, password_file): anyone who can publish there can write them") == true, "\(plain)")
        let noTLS = try ConfigLoader.load(
            yaml: Self.yaml(mqtt: "mqtt: {url: mqtt://broker.lan, username: gw, password_env: GW_PASSWORD}")
        ).warnings.map(\.description)
        #expect(noTLS.count == 1 && noTLS.first?.contains("without TLS (mqtts://): anyone") == true, "\(noTLS)")
        for mqtt in [
            "mqtt: {url: mqtts://broker.lan, username: gw, password_env: GW_PASSWORD}", "mqtt: {url: mqtt://127.0.0.1}"
        ] {
            #expect(try ConfigLoader.load(yaml: Self.yaml(mqtt: mqtt)).warnings.isEmpty, "\(mqtt)")
        }
    }
}
