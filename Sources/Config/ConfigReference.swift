import ConfigReading
import FoundationEssentials
import Glibc
import Sensors
import Values

/// The configuration reference: every key gattway accepts, with its type, default and meaning.
/// The parser takes its allowed keys from here (`keys(under:)`), so a key cannot be accepted
/// without being documented; docs/configuration.md's table is `markdownTable()`'s output
/// (`gattway config-reference`).
public enum ConfigReference {
    public struct Entry: Sendable, Hashable {
        /// Dotted path; `[]` marks list items: `services[].characteristics[].uuid`.
        public let key: String
        public let type: String
        /// The default, or `required`, or `—` for "absent unless set".
        public let defaultValue: String
        public let meaning: String
    }

    static let required = SensorKindDescription.Setting.required
    static let none = "—"

    private static func d(_ duration: Duration) -> String { DurationText.format(duration) }
    private static func n(_ value: Double) -> String { ConfigNode.formatNumber(value) }
    private static func hex16(_ value: UInt16) -> String {
        "0x" + [UInt8(value >> 8), UInt8(value & 0xFF)].hexString.uppercased()
    }

    typealias D = ConfigDefaults

    public static let entries: [Entry] = beforeSensorKinds + sensorKindEntries + afterSensorKinds

    private static let beforeSensorKinds: [Entry] = [
        Entry(key: "device", type: "mapping", defaultValue: none, meaning: "The gateway itself."),
        Entry(
            key: "device.name", type: "string", defaultValue: D.deviceName,
            meaning: "GAP device name (at most 248 bytes)."),
        Entry(
            key: "device.name_add_suffix", type: "boolean", defaultValue: "\(D.nameAddSuffix)",
            meaning: "Append `-` and 6 hex digits derived from /etc/machine-id to the name (and so to the id, "
                + "MQTT client id, topics and Home Assistant device), as ESPHome's `name_add_mac_suffix`: "
                + "one configuration, or one image, for many gateways. An explicit `device.id` still wins."),
        Entry(
            key: "device.id", type: "string", defaultValue: "name, lower-cased, other characters → `-`",
            meaning: "Id in MQTT topics (`<base>/<id>/…`): letters, digits, `-`, `_`."),
        Entry(
            key: "device.appearance", type: "integer 0-0xFFFF", defaultValue: hex16(D.appearance),
            meaning: "GAP Appearance (Assigned Numbers 2.6); 0x0540 is Generic Sensor."),

        Entry(key: "bluetooth", type: "mapping", defaultValue: none, meaning: "The BLE side."),
        Entry(
            key: "bluetooth.transport", type: "transport", defaultValue: D.transport.description,
            meaning: "Controller: `hciN` (HCI user channel), `tcp:HOST:PORT`, `unix:PATH`, `serial:DEVICE[,BAUD]`. `--hci` overrides."),
        Entry(key: "bluetooth.advertising", type: "mapping", defaultValue: none, meaning: "What gattway advertises."),
        Entry(
            key: "bluetooth.advertising.local_name", type: "string", defaultValue: "`device.name`",
            meaning: "Complete Local Name in the advertisement or scan response."),
        Entry(
            key: "bluetooth.advertising.service_uuids", type: "list of UUIDs", defaultValue: "[]",
            meaning: "Service UUIDs to advertise (16-bit SIG short form such as `181A`, or 128-bit)."),
        Entry(
            key: "bluetooth.advertising.interval", type: "duration 20ms-10.24s",
            defaultValue: d(D.advertisingInterval), meaning: "Advertising interval."),
        Entry(
            key: "bluetooth.advertising.tx_power", type: "bool", defaultValue: "false",
            meaning:
                "Advertise the TX Power Level (AD type 0x0A) the controller reports for advertising, which phones use to estimate distance. gattway cannot set the radio's power."
        ),
        Entry(
            key: "bluetooth.advertising.manufacturer_data", type: "mapping", defaultValue: none,
            meaning: "Manufacturer Specific Data to advertise."),
        Entry(
            key: "bluetooth.advertising.manufacturer_data.company_id", type: "integer 0-0xFFFF",
            defaultValue: required, meaning: "Company identifier (0xFFFF for tests)."),
        Entry(
            key: "bluetooth.advertising.manufacturer_data.data", type: "hex bytes", defaultValue: required,
            meaning: "Payload after the company id, e.g. `\"01 02 a0\"`."),
        Entry(
            key: "bluetooth.max_centrals", type: "integer 1-16", defaultValue: String(D.maxCentrals),
            meaning: "Centrals connected at once; advertising pauses at the limit."),
        Entry(
            key: "bluetooth.connection", type: "mapping", defaultValue: none,
            meaning:
                "Connection parameters gattway prefers: published as the Peripheral Preferred Connection Parameters, and, when this section is present, asked of each central whose connection does not meet them (L2CAP Connection Parameter Update Request; the central decides)."
        ),
        Entry(
            key: "bluetooth.connection.min_interval", type: "duration 7.5ms-4s",
            defaultValue: d(D.connectionMinInterval), meaning: "Shortest connection interval asked for."),
        Entry(
            key: "bluetooth.connection.max_interval", type: "duration 7.5ms-4s",
            defaultValue: d(D.connectionMaxInterval), meaning: "Longest connection interval asked for."),
        Entry(
            key: "bluetooth.connection.latency", type: "integer 0-499", defaultValue: String(D.connectionLatency),
            meaning: "Peripheral latency (connection events gattway may skip)."),
        Entry(
            key: "bluetooth.connection.supervision_timeout", type: "duration 100ms-32s",
            defaultValue: d(D.supervisionTimeout),
            meaning: "Link supervision timeout; must exceed (1 + latency) × max_interval × 2."),
        Entry(key: "bluetooth.security", type: "mapping", defaultValue: none, meaning: "Pairing (SMP)."),
        Entry(
            key: "bluetooth.security.io_capabilities", type: "enum", defaultValue: D.ioCapabilities.rawValue,
            meaning:
                "`no_input_no_output` (Just Works: encrypted, no MITM protection), `display_only` (Passkey Entry: the passkey is logged and published on `<base>/<dev>/pairing`; authenticated), or `display_yes_no` / `keyboard_display` (also Numeric Comparison with centrals that can confirm: the number is logged and published, and a press of the `confirm_with` button accepts it; authenticated). gattway cannot type passkeys: with `keyboard_only`, and for pairings that would need one, it refuses."
        ),
        Entry(
            key: "bluetooth.security.passkey", type: "integer 0-999999", defaultValue: "random per pairing",
            meaning: "Fixed passkey for Passkey Entry; needs displaying IO capabilities. Never logged or published."),
        Entry(
            key: "bluetooth.security.allow_legacy", type: "bool", defaultValue: String(D.allowLegacy),
            meaning: "Accept LE legacy pairing (otherwise LE Secure Connections only)."),
        Entry(
            key: "bluetooth.security.confirm_with", type: "sensor id", defaultValue: none,
            meaning:
                "A binary sensor (a button): pressing it confirms the Numeric Comparison number of the one pairing waiting for it (with two waiting, both are refused). Needs io_capabilities `display_yes_no` or `keyboard_display`; without it, Numeric Comparison is refused."
        ),

        Entry(
            key: "bluetooth.security.pairing", type: "enum", defaultValue: D.pairing.rawValue,
            meaning:
                "`window`: new centrals may pair only while a pairing window is open (`gattway pair`, a long press of the `pair_with` button, or `first_start_window` after a start without bonds); outside it a Pairing Request gets Pairing Failed (Pairing Not Supported), which is logged and counted. Bonded centrals reconnect and encrypt at any time. `open`: anyone in radio range may pair at any time (`gattway check` warns when outputs are writable)."
        ),
        Entry(
            key: "bluetooth.security.pairing_window", type: "duration 10s-1h", defaultValue: d(D.pairingWindow),
            meaning: "How long `gattway pair` (without `--for`) and the `pair_with` button open the pairing window."),
        Entry(
            key: "bluetooth.security.first_start_window", type: "duration 0s-1h", defaultValue: d(D.firstStartWindow),
            meaning:
                "How long the pairing window opens when gattway starts with no bonded central, so a fresh install can pair its first phone; `0s` keeps it closed until `gattway pair`."
        ),
        Entry(
            key: "bluetooth.security.pair_with", type: "sensor id", defaultValue: none,
            meaning:
                "A binary sensor (a button): holding it active for `pair_press` and releasing it opens the pairing window for `pairing_window`. Not the `confirm_with` button."
        ),
        Entry(
            key: "bluetooth.security.pair_press", type: "duration 500ms-30s", defaultValue: d(D.pairPress),
            meaning: "How long `pair_with` must be held (a shorter press does nothing)."),

        Entry(
            key: "bluetooth.bthome", type: "mapping", defaultValue: none,
            meaning: "How the readings of sensors with `bthome: true` are broadcast."),
        Entry(
            key: "bluetooth.bthome.key_file", type: "path", defaultValue: "not encrypted",
            meaning:
                "File holding the BTHome bind key: 32 hex digits (e.g. from `openssl rand -hex 16`), mode 0600. With it the broadcasts are encrypted (AES-CCM, BTHome v2) and Home Assistant asks for this key; the encryption counter is kept in `state_dir` (`bthome.counter`)."
        ),

        Entry(
            key: "state_dir", type: "path", defaultValue: D.stateDirectory,
            meaning:
                "Persisted counters, bonds (mode 0600), the BTHome encryption counter, the MQTT outbox and the ES trigger settings centrals wrote. One gattway per directory: it holds `gattway.lock` there while it runs, and a second one started on the same directory exits 1 naming the first's pid."
        ),
        Entry(
            key: "runtime_dir", type: "path", defaultValue: D.runtimeDirectory,
            meaning:
                "Where the running service listens on `control.sock` (mode 0600) for `gattway status` and `gattway bonds`; the unit's `RuntimeDirectory=gattway`."
        ),

        Entry(key: "gpio", type: "mapping", defaultValue: none, meaning: "Where sensor lines come from."),
        Entry(
            key: "gpio.backend", type: "enum", defaultValue: D.gpioBackend.rawValue,
            meaning: "`libgpiod` (real chips under /dev) or `simulated` (chips below)."),
        Entry(key: "gpio.chips", type: "list", defaultValue: "[]", meaning: "Simulated chips (backend `simulated` only)."),
        Entry(key: "gpio.chips[].name", type: "string", defaultValue: "`gpiochip<index>`", meaning: "Chip name."),
        Entry(
            key: "gpio.chips[].label", type: "string", defaultValue: "`\(D.simulatedChipLabelPrefix)<index>`",
            meaning: "Chip label (what sensors' `chip` may name)."),
        Entry(key: "gpio.chips[].lines", type: "list", defaultValue: required, meaning: "The chip's lines."),
        Entry(
            key: "gpio.chips[].lines[].name", type: "string", defaultValue: required,
            meaning: "Line name, unique on the chip (e.g. `GPIO17`)."),
        Entry(
            key: "gpio.chips[].lines[].generator", type: "mapping", defaultValue: none,
            meaning: "Waveform on the line's input; absent: low (or driven by an output)."),
        Entry(
            key: "gpio.chips[].lines[].generator.type", type: "enum", defaultValue: required,
            meaning: "`constant`, `square`, `pulses`, `steps`, `dht22`, `dht11`, `hcsr04`, `socket`."),
        Entry(
            key: "gpio.chips[].lines[].generator.level", type: "0 or 1", defaultValue: D.constantLevel ? "1" : "0",
            meaning: "`constant`: the level."),
        Entry(
            key: "gpio.chips[].lines[].generator.period", type: "duration", defaultValue: required,
            meaning: "`square`: period."),
        Entry(
            key: "gpio.chips[].lines[].generator.duty", type: "number 0-1", defaultValue: n(D.squareDuty),
            meaning: "`square`: fraction of the period spent high."),
        Entry(
            key: "gpio.chips[].lines[].generator.rate", type: "number (Hz)", defaultValue: required,
            meaning: "`pulses`: pulses per second."),
        Entry(
            key: "gpio.chips[].lines[].generator.width", type: "duration", defaultValue: "half the period",
            meaning: "`pulses`: high time of each pulse (shorter than 1/rate)."),
        Entry(
            key: "gpio.chips[].lines[].generator.steps", type: "list", defaultValue: required,
            meaning: "`steps`: `{level: 0|1, duration: D}` items played in order."),
        Entry(
            key: "gpio.chips[].lines[].generator.steps[].level", type: "0 or 1", defaultValue: required,
            meaning: "`steps`: level of this step."),
        Entry(
            key: "gpio.chips[].lines[].generator.steps[].duration", type: "duration", defaultValue: required,
            meaning: "`steps`: how long it holds."),
        Entry(
            key: "gpio.chips[].lines[].generator.repeat", type: "bool", defaultValue: String(D.stepsRepeat),
            meaning: "`steps`: start over after the last step."),
        Entry(
            key: "gpio.chips[].lines[].generator.temperature", type: "number (°C)",
            defaultValue: n(D.dhtTemperature), meaning: "`dht22`, `dht11`: temperature reported."),
        Entry(
            key: "gpio.chips[].lines[].generator.humidity", type: "number 0-100 (%)",
            defaultValue: n(D.dhtHumidity), meaning: "`dht22`, `dht11`: relative humidity reported."),
        Entry(
            key: "gpio.chips[].lines[].generator.silent_after", type: "duration", defaultValue: none,
            meaning: "`dht22`, `dht11`: the sensor stops answering this long after the start (a loose wire)."),
        Entry(
            key: "gpio.chips[].lines[].generator.silent_for", type: "duration", defaultValue: "for good",
            meaning: "`dht22`, `dht11`: how long it stays silent, from `silent_after`; then it answers again."),
        Entry(
            key: "gpio.chips[].lines[].generator.distance", type: "number 0.02-4 (m)",
            defaultValue: n(D.hcsr04Distance), meaning: "`hcsr04`: distance the echo encodes."),
        Entry(
            key: "gpio.chips[].lines[].generator.trigger", type: "line name", defaultValue: required,
            meaning: "`hcsr04`: the trigger line on the same chip."),
        Entry(
            key: "gpio.chips[].lines[].generator.path", type: "path", defaultValue: required,
            meaning: "`socket`: Unix datagram socket bound while a sensor holds the line; "
                + "each datagram's `0`/`1` bytes are levels applied in order (`printf 1 | socat - UNIX-SENDTO:PATH`)."),

        Entry(key: "sensors", type: "list", defaultValue: "[]", meaning: "Sensors and outputs on GPIO lines."),
        Entry(key: "sensors[].id", type: "string", defaultValue: required, meaning: "Unique id; characteristics refer to it."),
        Entry(
            key: "sensors[].kind", type: "enum", defaultValue: required,
            meaning: SensorKinds.all.map { "`\($0.name)`" }.joined(separator: ", ") + "."),
        Entry(
            key: "sensors[].line", type: "line name",
            defaultValue: "required (not "
                + SensorKinds.all.filter { !$0.settings.contains("line") }.map { "`\($0.name)`" }
                .joined(separator: "/") + ")",
            meaning: "The line, by name (`GPIO17`; on a Pi also `pin11`, the header pin)."),
        Entry(
            key: "sensors[].chip", type: "string", defaultValue: "any chip",
            meaning: "Chip label, name or /dev path holding the sensor's lines."),
        Entry(
            key: "sensors[].bias", type: "enum", defaultValue: InputLineConfig.defaultBias.rawValue,
            meaning: "Inputs: `as_is`, `disabled`, `pull_up`, `pull_down`."),
        Entry(
            key: "sensors[].active_low", type: "bool", defaultValue: String(InputLineConfig.defaultActiveLow),
            meaning: "The line is active when low."),
        Entry(
            key: "sensors[].debounce", type: "duration", defaultValue: d(InputLineConfig.defaultDebounce),
            meaning: "Inputs: ignore changes shorter than this (0 = off).")
    ]

    /// The settings of each kind (`Kinds/`), one row per key: where kinds share a key, their
    /// defaults and meanings are named by kind.
    private static let sensorKindEntries: [Entry] = {
        var order: [String] = []
        var rows: [String: [(kind: String, setting: SensorKindDescription.Setting)]] = [:]
        for kind in SensorKinds.all {
            for setting in kind.reference {
                if rows[setting.key] == nil { order.append(setting.key) }
                rows[setting.key, default: []].append((kind.name, setting))
            }
        }
        return order.map { key in
            let rows = rows[key]!
            let first = rows[0].setting
            // A nested key (`press.long_press_time`) belongs to its parent's kind already.
            guard rows.count > 1 || !key.contains(".") else {
                return Entry(
                    key: "sensors[].\(key)", type: first.type, defaultValue: first.defaultValue, meaning: first.meaning)
            }
            let defaults = grouped(rows.map { ($0.kind, $0.setting.defaultValue) })
            let meanings = grouped(rows.map { ($0.kind, $0.setting.meaning) })
            return Entry(
                key: "sensors[].\(key)", type: first.type,
                defaultValue: defaults.count == 1
                    ? defaults[0].value
                    : defaults.map { "\($0.value) (\($0.kinds.map { "`\($0)`" }.joined(separator: "/")))" }
                        .joined(separator: ", "),
                meaning: meanings.map { meaning in
                    meaning.kinds.map { "`\($0)`" }.joined(separator: ", ") + ": "
                        + (meaning.value.hasSuffix(".") ? String(meaning.value.dropLast()) : meaning.value)
                }.joined(separator: "; ") + ".")
        }
    }()

    /// The kinds sharing each value, in first-seen order.
    private static func grouped(_ pairs: [(kind: String, value: String)]) -> [(value: String, kinds: [String])] {
        var groups: [(value: String, kinds: [String])] = []
        for (kind, value) in pairs {
            if let index = groups.firstIndex(where: { $0.value == value }) {
                groups[index].kinds.append(kind)
            } else {
                groups.append((value, [kind]))
            }
        }
        return groups
    }

    private static let afterSensorKinds: [Entry] = [
        Entry(
            key: "sensors[].bthome", type: "bool", defaultValue: String(D.bthome),
            meaning:
                "Also broadcast the readings as BTHome v2 service data (not `output`), read without connecting; encrypted with `bluetooth.bthome.key_file` when set."
        ),
        Entry(
            key: "sensors[].filters", type: "list", defaultValue: "[]",
            meaning: "Applied in order; each item is one of the keys below."),
        Entry(key: "sensors[].filters[].invert", type: "true", defaultValue: none, meaning: "`binary`: swap 0 and 1."),
        Entry(
            key: "sensors[].filters[].delay_on", type: "duration", defaultValue: none,
            meaning: "`binary`: report 1 only after this long active."),
        Entry(
            key: "sensors[].filters[].delay_off", type: "duration", defaultValue: none,
            meaning: "`binary`: report 0 only after this long inactive."),
        Entry(
            key: "sensors[].filters[].moving_average", type: "integer 2-1000", defaultValue: none,
            meaning: "Mean of the last N values."),
        Entry(key: "sensors[].filters[].offset", type: "number", defaultValue: none, meaning: "Add this."),
        Entry(key: "sensors[].filters[].scale", type: "number", defaultValue: none, meaning: "Multiply by this."),

        Entry(key: "services", type: "list", defaultValue: "[]", meaning: "GATT services served."),
        Entry(
            key: "services[].uuid", type: "UUID", defaultValue: required,
            meaning: "SIG short form (`181A`) or 128-bit UUID."),
        Entry(
            key: "services[].name", type: "string", defaultValue: "unnamed (topics use the UUID)",
            meaning: "Unique; used in MQTT topics and `includes`."),
        Entry(
            key: "services[].primary", type: "bool", defaultValue: String(D.primary),
            meaning: "Primary (true) or secondary service."),
        Entry(
            key: "services[].includes", type: "list of service names", defaultValue: "[]",
            meaning: "Other configured services this one includes."),
        Entry(key: "services[].characteristics", type: "list", defaultValue: required, meaning: "At least one."),
        Entry(
            key: "services[].characteristics[].uuid", type: "UUID or name", defaultValue: required,
            meaning:
                "Characteristic type, e.g. `2A6E`, or an Environmental Sensing name: \(EnvironmentalSensingCharacteristic.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", "))."
        ),
        Entry(
            key: "services[].characteristics[].name", type: "string", defaultValue: "unnamed (topics use the UUID)",
            meaning: "Unique within the service; MQTT topic part and User Description."),
        Entry(
            key: "services[].characteristics[].properties", type: "list",
            defaultValue:
                "by source: sensor/mqtt `[read, notify]`, output sensor `[read, write, notify]`, static `[read]`, written `[read, write]`",
            meaning: "`read`, `write`, `write_without_response`, `notify`, `indicate`."),
        Entry(
            key: "services[].characteristics[].permissions", type: "mapping", defaultValue: none,
            meaning: "Link security needed to read / write."),
        Entry(
            key: "services[].characteristics[].permissions.read", type: "`open` or list",
            defaultValue: D.readPermission.description,
            meaning: "`open`, or any of `encrypted`, `authenticated` (MITM), `bonded`."),
        Entry(
            key: "services[].characteristics[].permissions.write", type: "`open` or list",
            defaultValue: "`[\(D.writePermission.description)]`",
            meaning: "As `read`; `open` makes `gattway check` warn."),
        Entry(
            key: "services[].characteristics[].format", type: "enum",
            defaultValue: "required, except for Environmental Sensing characteristics (their SIG format)",
            meaning:
                "\(ValueFormat.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")); `medfloat16`/`medfloat32` are IEEE 11073 SFLOAT/FLOAT (also written `sfloat`, `float11073`)."
        ),
        Entry(
            key: "services[].characteristics[].exponent", type: "integer -128-127",
            defaultValue: "\(D.exponent) (the SIG exponent for Environmental Sensing characteristics)",
            meaning: "Integer formats: fixed point, value = raw × 10^exponent (e.g. `sint16` with -2)."),
        Entry(
            key: "services[].characteristics[].max_length", type: "integer 1-512",
            defaultValue: String(ValueEncoding.attributeValueLimit), meaning: "`utf8`, `bytes`: longest value in bytes."),
        Entry(
            key: "services[].characteristics[].unit", type: "unit name or UUID",
            defaultValue: "none (the SIG unit for Environmental Sensing characteristics)",
            meaning:
                "Presentation Format unit: \(GATTUnit.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", ")), or its UUID (`272F`)."),
        Entry(
            key: "services[].characteristics[].source", type: "mapping", defaultValue: required,
            meaning: "Exactly one of the keys below."),
        Entry(
            key: "services[].characteristics[].source.sensor", type: "sensor id", defaultValue: none,
            meaning: "A sensor's value (an output's state; writes drive it)."),
        Entry(
            key: "services[].characteristics[].source.reading", type: "enum",
            defaultValue: "the sensor's first: `temperature` (dht), `duty_cycle` (pulse_width), else `value`",
            meaning: "With `sensor`: `value`, `temperature`, `humidity`, `duty_cycle`, `high_time`, `press` "
                + "(a `binary` sensor with `press`: one value per press, 1 single, 2 double, 4 long; an integer format "
                + "without exponent, such as `uint8`)."),
        Entry(
            key: "services[].characteristics[].source.mqtt", type: "topic", defaultValue: none,
            meaning: "The latest payload on this MQTT topic (subscribed while a central is)."),
        Entry(
            key: "services[].characteristics[].source.static", type: "value", defaultValue: none,
            meaning: "A fixed value in the characteristic's format."),
        Entry(
            key: "services[].characteristics[].source.written", type: "value", defaultValue: none,
            meaning: "Written by centrals (and MQTT `/set`), starting from this value."),
        Entry(
            key: "services[].characteristics[].descriptors", type: "list", defaultValue: "[]",
            meaning: "Extra descriptors (the CCCD is gattway's own)."),
        Entry(
            key: "services[].characteristics[].descriptors[].uuid", type: "UUID", defaultValue: required,
            meaning: "Descriptor type."),
        Entry(
            key: "services[].characteristics[].descriptors[].value", type: "string", defaultValue: none,
            meaning: "Value as UTF-8 text (this or `hex`)."),
        Entry(
            key: "services[].characteristics[].descriptors[].hex", type: "hex bytes", defaultValue: none,
            meaning: "Value as bytes (this or `value`)."),
        Entry(
            key: "services[].characteristics[].notify", type: "mapping", defaultValue: none,
            meaning: "Notification policy (needs `notify` or `indicate`)."),
        Entry(
            key: "services[].characteristics[].notify.min_interval", type: "duration",
            defaultValue: d(D.notifyMinInterval),
            meaning: "No faster than this; the newest value is sent when it expires."),
        Entry(
            key: "services[].characteristics[].notify.max_interval", type: "duration", defaultValue: "never",
            meaning: "Heartbeat: resend when nothing was sent for this long (on the MQTT value topic too; "
                + "Home Assistant gets `expire_after` = 3 × this)."),
        Entry(
            key: "services[].characteristics[].notify.delta", type: "number or `N%`", defaultValue: "any change",
            meaning: "Numeric formats: ignore smaller changes (absolute, or percent of the last sent)."),
        Entry(
            key: "services[].characteristics[].notify.on_change", type: "bool",
            defaultValue: "\(D.notifyOnChange) (`false` for a `press` reading: each press counts)",
            meaning: "Skip a value whose bytes equal the last one sent (false: send every update)."),
        Entry(
            key: "services[].characteristics[].notify.on_subscribe", type: "bool",
            defaultValue: "by source: sensor `true` (not a `press` reading), others `false`",
            meaning: "A central that subscribes gets the current value (if any) at once, not with the next value."),
        Entry(
            key: "services[].characteristics[].homeassistant", type: "mapping", defaultValue: none,
            meaning:
                "Changes to the Home Assistant entity announced for this characteristic (needs `mqtt`; see docs/home-assistant.md for what each characteristic becomes)."
        ),
        Entry(
            key: "services[].characteristics[].homeassistant.device_class", type: "string",
            defaultValue: "from the sensor", meaning: "A device class Home Assistant has for the entity's domain."),
        Entry(
            key: "services[].characteristics[].homeassistant.state_class", type: "string",
            defaultValue: "`measurement`; `total_increasing` for counters",
            meaning: "Sensors: `measurement`, `measurement_angle`, `total` or `total_increasing`."),
        Entry(
            key: "services[].characteristics[].homeassistant.unit", type: "string", defaultValue: "from `unit`",
            meaning: "Unit of measurement shown (as Home Assistant writes it, e.g. `L/min`)."),
        Entry(
            key: "services[].characteristics[].homeassistant.icon", type: "string", defaultValue: none,
            meaning: "Icon, as in `mdi:water-pump`."),
        Entry(
            key: "services[].characteristics[].homeassistant.expire_after", type: "duration 1s-7d",
            defaultValue: "3 × `notify.max_interval`",
            meaning: "Sensors and binary sensors: unavailable after this long without a value."),
        Entry(
            key: "services[].characteristics[].homeassistant.name", type: "string", defaultValue: "the characteristic's name",
            meaning: "Entity name (Home Assistant puts the device name in front)."),
        Entry(
            key: "services[].characteristics[].homeassistant.enabled", type: "bool", defaultValue: "true",
            meaning: "false: the entity is created disabled."),

        Entry(key: "mqtt", type: "mapping", defaultValue: "absent: no MQTT", meaning: "The MQTT mirror."),
        Entry(
            key: "mqtt.url", type: "URL", defaultValue: required,
            meaning: "`mqtt://HOST[:1883]` or `mqtts://HOST[:8883]` (TLS, verified). `--mqtt` overrides."),
        Entry(key: "mqtt.client_id", type: "string", defaultValue: "`gattway-<device.id>`", meaning: "MQTT client id."),
        Entry(key: "mqtt.username", type: "string", defaultValue: none, meaning: "User name."),
        Entry(
            key: "mqtt.password_file", type: "path", defaultValue: none,
            meaning: "File whose first line is the password (never write the password itself here)."),
        Entry(
            key: "mqtt.password_env", type: "string", defaultValue: none,
            meaning: "Environment variable holding the password (instead of `password_file`)."),
        Entry(key: "mqtt.tls", type: "mapping", defaultValue: none, meaning: "TLS files (`mqtts://` only)."),
        Entry(key: "mqtt.tls.ca", type: "path", defaultValue: "system trust store", meaning: "CA certificate (PEM)."),
        Entry(key: "mqtt.tls.cert", type: "path", defaultValue: none, meaning: "Client certificate (PEM); needs `key`."),
        Entry(key: "mqtt.tls.key", type: "path", defaultValue: none, meaning: "Client key (PEM); needs `cert`."),
        Entry(
            key: "mqtt.base_topic", type: "string", defaultValue: D.mqttBaseTopic,
            meaning: "Topic prefix `<base>`; no `+`, `#`, leading or trailing `/`."),
        Entry(key: "mqtt.qos", type: "integer 0-2", defaultValue: String(D.mqttQoS), meaning: "QoS of value publications."),
        Entry(key: "mqtt.retain", type: "bool", defaultValue: String(D.mqttRetain), meaning: "Retain value publications."),
        Entry(
            key: "mqtt.discovery", type: "bool", defaultValue: String(D.mqttDiscovery),
            meaning: "Publish Home Assistant discovery."),
        Entry(
            key: "mqtt.discovery_prefix", type: "string", defaultValue: D.mqttDiscoveryPrefix,
            meaning: "Home Assistant discovery prefix."),
        Entry(
            key: "mqtt.protocol", type: "enum", defaultValue: "\"\(D.mqttProtocol.rawValue)\"",
            meaning: "`\"5\"` or `\"3.1.1\"`."),
        Entry(key: "mqtt.keepalive", type: "duration 5s-18h", defaultValue: d(D.mqttKeepalive), meaning: "Keepalive."),
        Entry(
            key: "mqtt.payload", type: "enum", defaultValue: D.mqttPayload.rawValue,
            meaning: "Value payloads: `json` (`{\"value\": …, \"ts\": …}`) or `raw` bytes."),
        Entry(
            key: "mqtt.outbox_limit", type: "integer 1-1000000", defaultValue: String(D.mqttOutboxLimit),
            meaning: "QoS 1 events kept (and persisted) while the broker is unreachable.")
    ]

    /// The keys directly under `parent` (`""` for the top level), in reference order.
    static func keys(under parent: String) -> [String] {
        let prefix = parent.isEmpty ? "" : parent + "."
        return entries.compactMap { entry in
            guard entry.key.hasPrefix(prefix) else { return nil }
            let rest = entry.key.dropFirst(prefix.count)
            return rest.contains(".") ? nil : String(rest)
        }
    }

    /// The reference as a Markdown table (docs/configuration.md's configuration reference).
    public static func markdownTable() -> String {
        var lines = ["| Key | Type | Default | Meaning |", "|---|---|---|---|"]
        for entry in entries {
            let cells = ["`\(entry.key)`", entry.type, entry.defaultValue, entry.meaning]
                .map { $0.replacing("|", with: "\\|") }
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }
}
