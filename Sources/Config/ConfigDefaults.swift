import BluetoothHCI
import MQTTMirror

/// Every default of the configuration outside the sensor kinds, in one place (a kind's own
/// defaults are in its folder under Sources/Sensors/Kinds/, an input line's in
/// `InputLineConfig`). The parser applies these and `ConfigReference` prints them, so the
/// documentation cannot drift from the behaviour.
public enum ConfigDefaults {
    public static let deviceName = "gattway"
    /// `device.name_add_suffix`: off, as ESPHome's `name_add_mac_suffix`; the Raspberry Pi
    /// image's configuration turns it on, so one image makes a fleet of distinct gateways.
    public static let nameAddSuffix = false
    /// Where `device.name_add_suffix` reads the machine's identity (systemd makes it at first boot).
    public static let machineIDFile = "/etc/machine-id"
    /// GAP Appearance "Generic Sensor".
    public static let appearance: UInt16 = 0x0540
    public static let transport = HCITransportSpec.userChannel(adapter: 0)
    public static let advertisingInterval = Duration.milliseconds(100)
    public static let maxCentrals = 3
    public static let connectionMinInterval = Duration.milliseconds(30)
    public static let connectionMaxInterval = Duration.milliseconds(50)
    public static let connectionLatency = 0
    public static let supervisionTimeout = Duration.seconds(4)
    public static let ioCapabilities = IOCapabilities.noInputNoOutput
    public static let allowLegacy = false
    public static let pairing = PairingPolicy.window
    public static let pairingWindow = Duration.seconds(120)
    public static let firstStartWindow = Duration.seconds(600)
    public static let pairPress = Duration.seconds(3)
    public static let stateDirectory = "/var/lib/gattway"
    /// systemd's `RuntimeDirectory=gattway`.
    public static let runtimeDirectory = "/run/gattway"
    public static let gpioBackend = GPIOBackendKind.libgpiod
    public static let simulatedChipLabelPrefix = "gattway-sim"
    public static let constantLevel = false
    public static let squareDuty = 0.5
    public static let stepsRepeat = true
    public static let dhtTemperature = 21.5
    public static let dhtHumidity = 45.0
    public static let hcsr04Distance = 1.0
    public static let bthome = false
    public static let primary = true
    public static let readPermission = SecurityRequirement.open
    /// Writable characteristics need an encrypted, bonded link unless the configuration says `open`.
    public static let writePermission = SecurityRequirement.encryptedBonded
    public static let exponent: Int8 = 0
    public static let notifyMinInterval = Duration.zero
    public static let notifyOnChange = true
    /// `notify.on_change` for a characteristic carrying `reading`: false for events (two single
    /// presses in a row are two presses), true otherwise.
    public static func notifyOnChange(for source: ValueSource) -> Bool {
        if case .sensor(_, let reading) = source, reading.isEvent { false } else { notifyOnChange }
    }
    public static let mqttBaseTopic = "gattway"
    public static let mqttQoS = 1
    public static let mqttRetain = true
    public static let mqttDiscovery = true
    public static let mqttDiscoveryPrefix = "homeassistant"
    public static let mqttProtocol = MQTTProtocolVersion.v5
    public static let mqttKeepalive = Duration.seconds(60)
    public static let mqttPayload = MirrorPayloadStyle.json
    public static let mqttOutboxLimit = 10_000

    /// `device.id` when not set: the name, lower-cased, with anything but letters, digits, `-`
    /// and `_` turned into `-`.
    public static func deviceID(forName name: String) -> String {
        String(name.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") ? $0 : "-" })
    }

    /// What `device.name_add_suffix` appends to the name: `-` and six hex digits, the low 24 bits
    /// of the 64-bit FNV-1a hash of the machine id. A hash and not the id's own digits, because
    /// the name is broadcast to every phone and broker and systemd asks that the machine id stay
    /// confidential; stable for as long as the installation keeps its machine id.
    public static func nameSuffix(machineID: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in machineID.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        let digits = String(hash & 0xFF_FFFF, radix: 16)
        return "-" + String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// `mqtt.client_id` when not set.
    public static func mqttClientID(deviceID: String) -> String { "gattway-\(deviceID)" }

    /// `characteristics[].notify.on_subscribe` when not set, by value source: on for a sensor,
    /// whose reading a central subscribes to watch and which may not change for hours. Off for
    /// the others: a static or written value is a setting a central reads, and an MQTT source's
    /// topic is followed only while a central is subscribed, so the value held may be stale
    /// while the broker's retained message brings the current one right after the subscription.
    public static func notifyOnSubscribe(for source: ValueSource) -> Bool {
        if case .sensor(_, let reading) = source { !reading.isEvent } else { false }
    }

    /// `characteristics[].properties` when not set, by value source.
    public static func properties(for source: ValueSource, sensorIsOutput: Bool) -> CharacteristicProperties {
        switch source {
        case .sensor where sensorIsOutput: [.read, .write, .notify]
        case .sensor, .mqtt: [.read, .notify]
        case .fixed: [.read]
        case .written: [.read, .write]
        }
    }
}
