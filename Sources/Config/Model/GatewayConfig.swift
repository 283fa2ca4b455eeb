import BluetoothCore
import BluetoothHCI
import Values

/// A loaded, validated gattway configuration. Every optional key has its default applied
/// (see `ConfigDefaults`); `nil` means "not configured" only where the key's meaning is an absence.
public struct GatewayConfig: Sendable, Hashable {
    public var device: DeviceConfig
    public var bluetooth: BluetoothConfig
    /// Where counters, bonds and the MQTT outbox are persisted.
    public var stateDirectory: String
    /// Where the running service's control socket is (`control.sock`).
    public var runtimeDirectory: String
    public var gpio: GPIOConfig
    public var sensors: [SensorConfig]
    public var services: [ServiceConfig]
    /// nil when the configuration has no `mqtt` section (the mirror is off).
    public var mqtt: MQTTConfig?

    public init(
        device: DeviceConfig, bluetooth: BluetoothConfig, stateDirectory: String,
        runtimeDirectory: String = ConfigDefaults.runtimeDirectory, gpio: GPIOConfig, sensors: [SensorConfig], services: [ServiceConfig],
        mqtt: MQTTConfig?
    ) {
        self.device = device
        self.bluetooth = bluetooth
        self.stateDirectory = stateDirectory
        self.runtimeDirectory = runtimeDirectory
        self.gpio = gpio
        self.sensors = sensors
        self.services = services
        self.mqtt = mqtt
    }

    public func sensor(id: String) -> SensorConfig? {
        sensors.first { $0.id == id }
    }
}

public struct DeviceConfig: Sendable, Hashable {
    /// The GAP device name.
    public var name: String
    /// The device's id in MQTT topics (`<base>/<id>/...`): letters, digits, `-` and `_`.
    public var id: String
    /// GAP Appearance value (Bluetooth Assigned Numbers, section 2.6).
    public var appearance: UInt16

    public init(name: String, id: String, appearance: UInt16) {
        self.name = name
        self.id = id
        self.appearance = appearance
    }
}

public struct BluetoothConfig: Sendable, Hashable {
    public var transport: HCITransportSpec
    public var advertising: AdvertisingConfig
    /// How many centrals may be connected at once; advertising pauses at the limit.
    public var maxCentrals: Int
    public var connection: ConnectionPreferences
    public var security: SecurityConfig
    public var bthome: BTHomeConfig

    public init(
        transport: HCITransportSpec, advertising: AdvertisingConfig, maxCentrals: Int,
        connection: ConnectionPreferences, security: SecurityConfig, bthome: BTHomeConfig = BTHomeConfig()
    ) {
        self.transport = transport
        self.advertising = advertising
        self.maxCentrals = maxCentrals
        self.connection = connection
        self.security = security
        self.bthome = bthome
    }
}

/// `bluetooth.bthome`: how the readings of sensors with `bthome: true` are broadcast.
public struct BTHomeConfig: Sendable, Hashable {
    /// The bind key that encrypts the broadcasts, read from `keyFile` when the configuration is
    /// loaded; nil: they go out in the clear.
    public var key: BTHomeKey?
    public var keyFile: String?

    public init(key: BTHomeKey? = nil, keyFile: String? = nil) {
        self.key = key
        self.keyFile = keyFile
    }
}

public struct AdvertisingConfig: Sendable, Hashable {
    public var localName: String
    public var serviceUUIDs: [BluetoothUUID]
    public var interval: Duration
    /// Advertise the TX power level the controller reports (AD type 0x0A).
    public var includesTxPower: Bool
    public var manufacturerData: ManufacturerData?

    public init(
        localName: String, serviceUUIDs: [BluetoothUUID], interval: Duration,
        includesTxPower: Bool, manufacturerData: ManufacturerData?
    ) {
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.interval = interval
        self.includesTxPower = includesTxPower
        self.manufacturerData = manufacturerData
    }
}

public struct ManufacturerData: Sendable, Hashable {
    public var companyID: UInt16
    public var data: [UInt8]

    public init(companyID: UInt16, data: [UInt8]) {
        self.companyID = companyID
        self.data = data
    }
}

/// The Peripheral Preferred Connection Parameters gattway asks centrals for.
public struct ConnectionPreferences: Sendable, Hashable {
    public var minInterval: Duration
    public var maxInterval: Duration
    /// Peripheral latency in connection events.
    public var latency: Int
    public var supervisionTimeout: Duration
    /// Whether gattway asks each central for these parameters (the configuration has a
    /// `bluetooth.connection` section); otherwise they are only published, in the Peripheral
    /// Preferred Connection Parameters characteristic.
    public var asksCentrals: Bool

    public init(
        minInterval: Duration, maxInterval: Duration, latency: Int,
        supervisionTimeout: Duration, asksCentrals: Bool
    ) {
        self.minInterval = minInterval
        self.maxInterval = maxInterval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
        self.asksCentrals = asksCentrals
    }

    /// The intervals in 1.25 ms units and the timeout in 10 ms units, as the PPCP characteristic
    /// and the L2CAP connection parameter request carry them.
    public var minIntervalUnits: UInt16 { Self.units(minInterval, of: .microseconds(1250)) }
    public var maxIntervalUnits: UInt16 { Self.units(maxInterval, of: .microseconds(1250)) }
    public var supervisionTimeoutUnits: UInt16 { Self.units(supervisionTimeout, of: .milliseconds(10)) }

    private static func units(_ duration: Duration, of unit: Duration) -> UInt16 {
        UInt16(clamping: Int((duration / unit).rounded()))
    }
}

public struct SecurityConfig: Sendable, Hashable {
    public var ioCapabilities: IOCapabilities
    /// A fixed 6-digit passkey; nil lets gattway pick a random one per pairing and display it.
    public var passkey: UInt32?
    /// Accept LE legacy pairing (otherwise only LE Secure Connections).
    public var allowLegacy: Bool
    /// The binary sensor (a button) whose press confirms a Numeric Comparison value; nil refuses
    /// Numeric Comparison.
    public var confirmWith: String?
    /// When new centrals may pair: only inside a pairing window (the default), or at any time.
    public var pairing: PairingPolicy
    /// How long `gattway pair` (without `--for`) and the `pair_with` button open the window.
    public var pairingWindow: Duration
    /// How long the window opens at start while no central is bonded (zero: not at all).
    public var firstStartWindow: Duration
    /// The binary sensor (a button) whose long press opens the pairing window.
    public var pairWith: String?
    /// How long `pair_with` must be held down.
    public var pairPress: Duration

    public init(
        ioCapabilities: IOCapabilities, passkey: UInt32?, allowLegacy: Bool, confirmWith: String? = nil,
        pairing: PairingPolicy = ConfigDefaults.pairing, pairingWindow: Duration = ConfigDefaults.pairingWindow,
        firstStartWindow: Duration = ConfigDefaults.firstStartWindow, pairWith: String? = nil,
        pairPress: Duration = ConfigDefaults.pairPress
    ) {
        self.ioCapabilities = ioCapabilities
        self.passkey = passkey
        self.allowLegacy = allowLegacy
        self.confirmWith = confirmWith
        self.pairing = pairing
        self.pairingWindow = pairingWindow
        self.firstStartWindow = firstStartWindow
        self.pairWith = pairWith
        self.pairPress = pairPress
    }
}

/// `bluetooth.security.pairing`.
public enum PairingPolicy: String, Sendable, Hashable, CaseIterable {
    /// New centrals pair only inside a window the owner opens.
    case window
    /// Anyone in radio range may pair at any time.
    case open
}

/// SMP IO capabilities (Core Vol 3 Part H 2.3.2).
public enum IOCapabilities: String, Sendable, Hashable, CaseIterable {
    case displayOnly = "display_only"
    case displayYesNo = "display_yes_no"
    case keyboardOnly = "keyboard_only"
    case noInputNoOutput = "no_input_no_output"
    case keyboardDisplay = "keyboard_display"

    /// Whether gattway can show a passkey with these capabilities.
    public var canDisplay: Bool {
        self == .displayOnly || self == .displayYesNo || self == .keyboardDisplay
    }

    /// Whether these capabilities lead to Numeric Comparison with a central that can confirm too
    /// (Core Vol 3 Part H 2.3.5.1, LE Secure Connections).
    public var canConfirm: Bool {
        self == .displayYesNo || self == .keyboardDisplay
    }
}
