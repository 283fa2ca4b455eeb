import Config
import TestHarness
import Testing

/// Each case is a small configuration with one mistake, and the exact report gattway gives for it:
/// path, line and message.
struct BrokenConfigTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let yaml: String
        let expected: [String]
        var testDescription: String { name }
    }

    /// A valid simulated setup that the cases below break in one place each.
    static let sensorsAndService = """
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: GPIO17
                - name: GPIO27
        sensors:
          - id: door
            kind: binary
            line: GPIO17
          - id: temp
            kind: counter
            line: GPIO27
        """

    static let cases: [Case] = [
        Case(
            name: "characteristic UUID that is not hexadecimal",
            yaml: """
                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 2A6E
                        source: {static: 21}
                      - uuid: 2A6G
                        format: uint8
                        source: {static: 1}
                """, expected: [#"services[0].characteristics[1].uuid (line 6): "2A6G" is not a UUID"#]),
        Case(
            name: "misspelt sensor key gets a did-you-mean hint",
            yaml: """
                sensors:
                  - id: door
                    kind: binary
                    line: GPIO17
                    debunce: 10ms
                """, expected: [#"sensors[0].debunce (line 5): unknown key; did you mean "debounce"?"#]),
        Case(
            name: "misspelt top-level section",
            yaml: """
                device:
                  name: x
                sensor: []
                """, expected: [#"sensor (line 3): unknown key; did you mean "sensors"?"#]),
        Case(
            name: "unknown key far from any known one lists the known keys",
            yaml: """
                device:
                  colour: red
                """, expected: [#"device.colour (line 2): unknown key (expected one of: name, name_add_suffix, id, appearance)"#]),
        Case(
            name: "integer expected",
            yaml: """
                bluetooth:
                  max_centrals: two
                """, expected: [#"bluetooth.max_centrals (line 2): expected an integer, got "two""#]),
        Case(
            name: "integer out of range",
            yaml: """
                bluetooth:
                  max_centrals: 40
                """, expected: ["bluetooth.max_centrals (line 2): 40 is out of range (1-16)"]),
        Case(
            name: "duration without a unit",
            yaml: """
                bluetooth:
                  advertising:
                    interval: 100
                """,
            expected: [#"bluetooth.advertising.interval (line 3): "100" is not a duration (write a number and a unit: 500ms, 2s, 1m)"#]),
        Case(
            name: "advertising interval below the Bluetooth minimum",
            yaml: """
                bluetooth:
                  advertising:
                    interval: 5ms
                """, expected: ["bluetooth.advertising.interval (line 3): 5ms is out of range (20ms-10.24s)"]),
        Case(
            name: "HCI transport that does not parse",
            yaml: """
                bluetooth:
                  transport: hci999
                """,
            expected: [
                #"bluetooth.transport (line 2): "hci999" is not an HCI transport: the adapter number must be 0-255, as in hci0 (expected hciN, tcp:HOST:PORT, unix:PATH or serial:DEVICE[,BAUD])"#
            ]),
        Case(
            name: "sensor kind misspelt",
            yaml: """
                sensors:
                  - id: door
                    kind: binnary
                    line: GPIO17
                """,
            expected: [
                #"sensors[0].kind (line 3): "binnary" is not valid; did you mean "binary"? expected one of binary, counter, rate, tachometer, pulse_width, distance, dht22, dht11, rotary_encoder, output"#
            ]),
        Case(
            name: "sensor without a kind",
            yaml: """
                sensors:
                  - id: door
                    line: GPIO17
                """, expected: [#"sensors[0] (line 2): missing required key "kind""#]),
        Case(
            name: "setting of another sensor kind",
            yaml: """
                sensors:
                  - id: flow
                    kind: rate
                    line: GPIO17
                    hold_time: 1s
                """,
            expected: [
                #"sensors[0].hold_time (line 5): not a setting of "rate" (its settings: line, bias, active_low, debounce, window, per, scale)"#
            ]),
        Case(
            name: "duplicate sensor id",
            yaml: sensorsAndService + """

                  - id: door
                    kind: output
                    line: GPIO27
                """,
            expected: [
                #"sensors[2].id (line 14): duplicate sensor id "door" (first at line 8)"#,
                #"sensors[2].line (line 16): line GPIO27 is already used by sensor "temp""#
            ]),
        Case(
            name: "characteristic naming a missing sensor",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 2A6E
                        source: {sensor: tmp}
                """, expected: [#"services[0].characteristics[0].source.sensor (line 18): no sensor "tmp"; did you mean "temp"?"#]),
        Case(
            name: "confirm button naming a missing sensor",
            yaml: """
                bluetooth:
                  security: {io_capabilities: display_yes_no, confirm_with: dor}
                """ + "\n" + sensorsAndService,
            expected: [#"bluetooth.security.confirm_with (line 2): no sensor "dor"; did you mean "door"?"#]),
        Case(
            name: "confirm button that is not a binary sensor",
            yaml: """
                bluetooth:
                  security: {io_capabilities: display_yes_no, confirm_with: temp}
                """ + "\n" + sensorsAndService,
            expected: [
                #"bluetooth.security.confirm_with (line 2): sensor "temp" is a counter sensor; confirming needs a binary one (a button)"#
            ]),
        Case(
            name: "confirm button without capabilities that confirm",
            yaml: """
                bluetooth:
                  security: {io_capabilities: display_only, confirm_with: door}
                """ + "\n" + sensorsAndService,
            expected: [
                #"bluetooth.security.confirm_with (line 2): confirming numbers needs io_capabilities display_yes_no or keyboard_display (it is display_only)"#
            ]),
        Case(
            name: "input sensor written by centrals",
            yaml: sensorsAndService + """

                services:
                  - uuid: 1815
                    characteristics:
                      - uuid: 2A56
                        format: bool
                        properties: [read, write]
                        source: {sensor: door}
                        permissions: {write: [encrypted, bonded]}
                """,
            expected: [
                #"services[0].characteristics[0].properties (line 19): sensor "door" is an input (binary); only an output sensor can be written"#
            ]),
        Case(
            name: "written source without a write property",
            yaml: """
                services:
                  - uuid: 1815
                    characteristics:
                      - uuid: 2A56
                        format: uint8
                        properties: [read]
                        source: {written: 0}
                """,
            expected: [
                "services[0].characteristics[0].properties (line 6): source is written by centrals, but the properties allow no write (add write or write_without_response)"
            ]),
        Case(
            name: "include of an unknown service",
            yaml: """
                services:
                  - uuid: 180F
                    name: battery
                    characteristics:
                      - uuid: 2A19
                        format: uint8
                        source: {static: 100}
                  - uuid: 181A
                    name: environment
                    includes: [batery]
                    characteristics:
                      - uuid: 2A6E
                        source: {static: 20}
                """, expected: [#"services[1].includes[0] (line 10): no service named "batery"; did you mean "battery"?"#]),
        Case(
            name: "static value that does not fit the format",
            yaml: """
                services:
                  - uuid: 180F
                    characteristics:
                      - uuid: 2A19
                        format: uint8
                        source: {static: 300}
                """, expected: ["services[0].characteristics[0].source.static (line 6): out of range: 300 does not fit uint8 (0...255)"]),
        Case(
            name: "notify policy on a characteristic that cannot notify",
            yaml: """
                services:
                  - uuid: 180F
                    characteristics:
                      - uuid: 2A19
                        format: uint8
                        source: {static: 100}
                        notify: {min_interval: 1s}
                """, expected: ["services[0].characteristics[0].notify (line 7): a notify policy needs the notify or indicate property"]),
        Case(
            name: "current value on subscribe that is not a boolean",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 2A6E
                        source: {sensor: temp}
                        notify: {on_subscribe: sometimes}
                """, expected: [#"services[0].characteristics[0].notify.on_subscribe (line 19): expected true or false, got "sometimes""#]),
        Case(
            name: "format missing for a UUID gattway does not know",
            yaml: """
                services:
                  - uuid: 1815
                    characteristics:
                      - uuid: 2A56
                        source: {static: 1}
                """,
            expected: [
                #"services[0].characteristics[0] (line 4): missing required key "format" (it may be left out only for 2A6E, 2A6F, 2A6D, 2A70, 2A71, 2A72, 2A73, 2A74, 2A75, 2A76, 2A77, 2A78, 2A79, 2A7A, 2A7B, 2AFB)"#
            ]),
        Case(
            name: "Home Assistant device class the entity's domain does not have",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: bool
                        source: {sensor: door}
                        homeassistant: {device_class: dor}
                mqtt:
                  url: mqtt://localhost
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant.device_class (line 20): "dor" is not a binary_sensor device class; did you mean "door"? (see Home Assistant's binary_sensor device classes)"#
            ]),
        Case(
            name: "Home Assistant state class on a binary sensor",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: bool
                        source: {sensor: door}
                        homeassistant: {state_class: measurement}
                mqtt:
                  url: mqtt://localhost
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant.state_class (line 20): only sensor entities take a state_class (this one is a binary_sensor)"#
            ]),
        Case(
            name: "Home Assistant state class misspelt",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: uint32
                        source: {sensor: temp}
                        homeassistant: {state_class: total_increase}
                mqtt:
                  url: mqtt://localhost
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant.state_class (line 20): "total_increase" is not a state class; did you mean "total_increasing"? (state classes: measurement, measurement_angle, total, total_increasing)"#
            ]),
        Case(
            name: "Home Assistant settings without the mqtt section",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: bool
                        source: {sensor: door}
                        homeassistant: {name: Door}
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant (line 20): Home Assistant entities come through MQTT discovery; add the mqtt section"#
            ]),
        Case(
            name: "Home Assistant settings on a characteristic without an entity",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: uint8
                        source: {static: 1}
                        homeassistant: {name: Fixed}
                mqtt:
                  url: mqtt://localhost
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant (line 20): this characteristic gets no Home Assistant entity (only sensor sources and writable written values of a text, number or bool format do)"#
            ]),
        Case(
            name: "Home Assistant icon without the mdi: prefix",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: uint32
                        source: {sensor: temp}
                        homeassistant: {icon: thermometer}
                mqtt:
                  url: mqtt://localhost
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant.icon (line 20): "thermometer" is not an icon name (icons are written as in mdi:thermometer)"#
            ]),
        Case(
            name: "Home Assistant expire_after on a switch-like entity",
            yaml: sensorsAndService + """

                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        format: bool
                        source: {written: false}
                        homeassistant: {expire_after: 10s, enabled: false}
                mqtt:
                  url: mqtt://localhost
                """,
            expected: [
                #"services[0].characteristics[0].homeassistant.expire_after (line 20): only sensor and binary_sensor entities expire (this one is a switch)"#
            ]),
        Case(
            name: "MQTT source without an mqtt section",
            yaml: """
                services:
                  - uuid: 181A
                    characteristics:
                      - uuid: 2A6E
                        source: {mqtt: weather/temperature}
                """, expected: ["services[0].characteristics[0].source.mqtt (line 5): an MQTT source needs the mqtt section"]),
        Case(
            name: "password written inline",
            yaml: """
                mqtt:
                  url: mqtt://localhost
                  password: hunter2
                """,
            expected: ["mqtt.password (line 3): the password is never written in the configuration; use password_file or password_env"]),
        Case(
            name: "broker URL with the wrong scheme",
            yaml: """
                mqtt:
                  url: http://localhost:1883
                """,
            expected: [
                #"mqtt.url (line 2): "http://localhost:1883" is not a broker URL: the scheme must be mqtt:// or mqtts:// (expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT])"#
            ]),
        Case(
            name: "TLS files with a plain mqtt:// URL",
            yaml: """
                mqtt:
                  url: mqtt://localhost
                  tls:
                    ca: /etc/ca.pem
                """, expected: ["mqtt.tls.ca (line 4): /etc/ca.pem: no such file", "mqtt.tls (line 4): TLS files need an mqtts:// url"]),
        Case(
            name: "simulated line that does not exist",
            yaml: """
                gpio:
                  backend: simulated
                  chips:
                    - lines:
                        - name: GPIO17
                sensors:
                  - id: door
                    kind: binary
                    line: GPIO71
                """, expected: [#"sensors[0].line (line 9): no line "GPIO71" on the simulated chips; did you mean "GPIO17"?"#]),
        Case(
            name: "a Raspberry Pi name on a simulated chip that is not the Pi's pin controller",
            yaml: """
                gpio:
                  backend: simulated
                  chips:
                    - label: expander
                      lines:
                        - name: SDA1
                        - name: SCL1
                        - name: GPIO_GCLK
                sensors:
                  - id: door
                    kind: binary
                    line: GPIO2
                """, expected: [#"sensors[0].line (line 12): no line "GPIO2" on the simulated chips"#]),
        Case(
            name: "descriptor that gattway manages itself",
            yaml: """
                services:
                  - uuid: 1815
                    characteristics:
                      - uuid: 2A56
                        format: uint8
                        source: {static: 7}
                        descriptors:
                          - {uuid: 2902, hex: "01 00"}
                """,
            expected: [
                "services[0].characteristics[0].descriptors[0].uuid (line 8): the Client Characteristic Configuration (2902) is managed by gattway"
            ]),
        Case(
            name: "filter that belongs to binary sensors",
            yaml: """
                sensors:
                  - id: rain
                    kind: counter
                    line: GPIO27
                    filters:
                      - invert: true
                """, expected: ["sensors[0].filters[0].invert (line 6): invert applies to binary sensors only (this sensor is counter)"]),
        Case(
            name: "a counter reported (and so saved) more often than a tenth of a second",
            yaml: """
                sensors:
                  - id: rain
                    kind: counter
                    line: GPIO27
                    report_interval: 10ms
                """, expected: ["sensors[0].report_interval (line 5): 10ms is out of range (100ms-1h)"]),
        Case(
            name: "YAML syntax error",
            yaml: """
                device:
                  name: x
                 id: y
                """, expected: ["configuration (line 3): invalid YAML: did not find expected key (while parsing a block mapping)"]),
        Case(
            name: "a client certificate without a CA, which the MQTT client cannot use",
            yaml: """
                mqtt:
                  url: mqtts://broker.lan
                  tls: {cert: /etc/gattway/client.pem, key: /etc/gattway/client.key}
                """,
            expected: [
                "mqtt.tls.cert (line 3): /etc/gattway/client.pem: no such file",
                "mqtt.tls.key (line 3): /etc/gattway/client.key: no such file",
                "mqtt.tls (line 3): a client certificate (cert, key) needs ca as well"
            ]),
        Case(
            name: "extended advertising, which gattway does not do",
            yaml: """
                bluetooth:
                  advertising: {extended: true}
                """,
            expected: [
                "bluetooth.advertising.extended (line 2): extended advertising is not supported: gattway advertises with legacy PDUs (31 bytes of advertising data and 31 of scan response), which every phone scans for; remove this key"
            ]),
        Case(
            name: "a TX power in dBm, which gattway cannot set",
            yaml: """
                bluetooth:
                  advertising:
                    tx_power: 4
                """,
            expected: [
                "bluetooth.advertising.tx_power (line 3): 4 dBm cannot be set: tx_power is true or false (advertise the TX power level the controller reports; gattway cannot set the radio's power)"
            ]),
        Case(
            name: "duplicate YAML key",
            yaml: """
                device:
                  name: x
                  name: y
                """, expected: [#"configuration (line 2): invalid YAML: duplicate key "name" in one mapping"#]),
        Case(
            name: "a mapping where a list belongs",
            yaml: """
                sensors:
                  id: door
                """, expected: ["sensors (line 2): expected a list, got a mapping"]),
        Case(
            name: "supervision timeout too short for the interval",
            yaml: """
                bluetooth:
                  connection:
                    max_interval: 1s
                    supervision_timeout: 1s
                """,
            expected: [
                "bluetooth.connection.supervision_timeout (line 4): 1s is too short for max_interval 1s and latency 0 (must exceed 2s)"
            ]),
        Case(
            name: "a line's socket path longer than a Unix socket path may be",
            yaml: """
                gpio:
                  backend: simulated
                  chips:
                    - lines:
                        - name: DOOR
                          generator: {type: socket, path: /tmp/\(String(repeating: "d", count: 110))}
                """,
            expected: [
                "gpio.chips[0].lines[0].generator.path (line 6): 115 bytes is longer than a Unix socket path may be (107)"
            ])
    ]

    @Test(arguments: cases)
    func reportsExactPathLineAndMessage(_ testCase: Case) {
        #expect(errors(testCase.yaml) == testCase.expected)
    }

    @Test func fiveDifferentMistakesAreAllReported() {
        #expect(
            errors(BrokenConfiguration.fiveMistakes) == [
                #"device.colour (line 3): unknown key (expected one of: name, name_add_suffix, id, appearance)"#,
                #"bluetooth.transport (line 5): "usb0" is not an HCI transport: unknown transport (expected hciN, tcp:HOST:PORT, unix:PATH or serial:DEVICE[,BAUD])"#,
                #"bluetooth.max_centrals (line 6): expected an integer, got "many""#,
                #"services[0].characteristics[0].uuid (line 14): "2A6G" is not a UUID"#,
                #"services[0].characteristics[1].source.sensor (line 18): no sensor "dor"; did you mean "door"?"#
            ])
    }

    @Test func missingFileIsReportedWithItsPath() {
        #expect(throws: ConfigError.self) { try ConfigLoader.load(file: "/nonexistent/gattway.yaml") }
        do {
            _ = try ConfigLoader.load(file: "/nonexistent/gattway.yaml")
        } catch {
            #expect(error.description == "/nonexistent/gattway.yaml: 1 error\n  error: configuration: no such file")
        }
    }

    private func errors(_ yaml: String) -> [String] {
        do {
            _ = try ConfigLoader.load(yaml: yaml)
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }
}
