import FoundationEssentials

/// A characteristic as it appears in topics: `<base>/<dev>/<service>/<characteristic>`.
public struct MirrorCharacteristicID: Hashable, Sendable, CustomStringConvertible {
    public let service: String
    public let characteristic: String
    /// Both names hashed once, when the id is made: the mirror looks a characteristic up by id for
    /// every value, and hashing the two strings each time cost more than the rest of the lookup.
    private let nameHash: Int

    public init(service: String, characteristic: String) {
        self.service = service
        self.characteristic = characteristic
        var hasher = Hasher()
        hasher.combine(service)
        hasher.combine(characteristic)
        nameHash = hasher.finalize()
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.nameHash == rhs.nameHash && lhs.service == rhs.service && lhs.characteristic == rhs.characteristic
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(nameHash) }

    public var description: String { "\(service)/\(characteristic)" }
}

/// How a characteristic's value topic is encoded (`mqtt.payload`).
public enum MirrorPayloadStyle: String, Sendable, Hashable, CaseIterable {
    /// `{"value": <decoded value>, "ts": "<ISO 8601>"}` (default).
    case json
    /// The characteristic's bytes exactly as a central reads them.
    case raw
}

/// A characteristic's value as the JSON literal its payloads carry (`21.5`, `true`, `"text"`,
/// `"0aff"`, `null`). The gateway prints it from the bytes on air at the precision of the
/// characteristic's format (`ValueJSON.literal`), so MQTT shows what a phone reads; the mirror
/// only places it.
public struct MirrorValue: Sendable, Equatable {
    public var json: String

    public init(json: String) {
        self.json = json
    }
}

/// Home Assistant entity announced for a characteristic through MQTT discovery.
public struct HomeAssistantEntity: Sendable, Equatable {
    /// An event code a value carries and Home Assistant's name for it (`single_press`, ...).
    public struct EventType: Sendable, Equatable {
        public var code: Int
        public var name: String
        /// The device trigger's `type` (`button_short_press`, ...).
        public var triggerType: String

        public init(code: Int, name: String, triggerType: String) {
            self.code = code
            self.name = name
            self.triggerType = triggerType
        }
    }

    /// What a `number` entity may be set to, as JSON numbers.
    public struct NumberRange: Sendable, Equatable {
        public var min: String
        public var max: String
        public var step: String

        public init(min: String, max: String, step: String) {
            self.min = min
            self.max = max
            self.step = step
        }
    }

    public var domain: HomeAssistantDomain
    public var name: String
    /// Home Assistant device class (`temperature`, `motion`, `outlet`, ...).
    public var deviceClass: String?
    public var unit: String?
    /// `measurement`, `total` or `total_increasing` (sensors): what gives long-term statistics.
    public var stateClass: String?
    /// Decimal places Home Assistant shows (`suggested_display_precision`).
    public var displayPrecision: Int?
    /// `mdi:...`.
    public var icon: String?
    /// Seconds without a value before the entity shows unavailable; overrides the default of
    /// three heartbeats.
    public var expireAfter: Int64?
    /// false: the entity is created disabled.
    public var enabled: Bool
    /// `number` entities.
    public var range: NumberRange?
    /// `text` entities: the longest text, in bytes (the characteristic's maximum length).
    public var maxLength: Int?
    /// `event` entities: the events a value may be.
    public var eventTypes: [EventType]
    /// earlier gattway versions announced this entity on its own topic
    /// (`<prefix>/<kind>/gattway_<dev>/<object>/config`), so it is migrated from there.
    public var announcedPerEntity: Bool

    public init(
        domain: HomeAssistantDomain, name: String, deviceClass: String? = nil, unit: String? = nil, stateClass: String? = nil,
        displayPrecision: Int? = nil, icon: String? = nil, expireAfter: Int64? = nil, enabled: Bool = true,
        range: NumberRange? = nil, maxLength: Int? = nil, eventTypes: [EventType] = [],
        announcedPerEntity: Bool = false
    ) {
        self.domain = domain
        self.name = name
        self.deviceClass = deviceClass
        self.unit = unit
        self.stateClass = stateClass
        self.displayPrecision = displayPrecision
        self.icon = icon
        self.expireAfter = expireAfter
        self.enabled = enabled
        self.range = range
        self.maxLength = maxLength
        self.eventTypes = eventTypes
        self.announcedPerEntity = announcedPerEntity
    }
}

/// A component of the Home Assistant device document, as gattway remembers having published it.
public struct HomeAssistantComponent: Sendable, Hashable, Comparable {
    /// `sensor`, `binary_sensor`, `switch`, `text`, `number`, `event`, `device_automation` (a device trigger).
    public var platform: String
    /// The key under `cmps`: `<service>_<characteristic>`, or a diagnostic's name.
    public var id: String

    public init(platform: String, id: String) {
        self.platform = platform
        self.id = id
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { (lhs.id, lhs.platform) < (rhs.id, rhs.platform) }
}

public struct MirrorCharacteristic: Sendable, Equatable {
    public var id: MirrorCharacteristicID
    public var payloadStyle: MirrorPayloadStyle
    /// Whether `<...>/set` is subscribed and handed to the gateway's validator.
    public var acceptsSet: Bool
    /// When set, the characteristic's value comes from this MQTT topic, subscribed only while at
    /// least one central is subscribed to the characteristic.
    public var sourceTopic: String?
    public var homeAssistant: HomeAssistantEntity?
    /// The notify policy's heartbeat (`max_interval`), on MQTT too: the last value is published
    /// again when nothing was published on its topic for this long, and Home Assistant marks a
    /// sensor unavailable after three heartbeats without one (`expire_after`).
    public var heartbeat: Duration?
    /// Each value is a momentary event (a button press), not a state: never retained, so
    /// nobody subscribing later (Home Assistant's device triggers at a restart) takes an old
    /// press for a new one, and not published again on reconnection.
    public var isEvent: Bool
    /// The value comes from a sensor that may stop answering: its availability is published on
    /// `<value topic>/availability`, and its Home Assistant entity follows it.
    public var reportsAvailability: Bool

    public init(
        id: MirrorCharacteristicID, payloadStyle: MirrorPayloadStyle = .json,
        acceptsSet: Bool = false, sourceTopic: String? = nil,
        homeAssistant: HomeAssistantEntity? = nil, heartbeat: Duration? = nil, isEvent: Bool = false,
        reportsAvailability: Bool = false
    ) {
        self.id = id
        self.payloadStyle = payloadStyle
        self.acceptsSet = acceptsSet
        self.sourceTopic = sourceTopic
        self.homeAssistant = homeAssistant
        self.heartbeat = heartbeat
        self.isEvent = isEvent
        self.reportsAvailability = reportsAvailability
    }
}

public struct MirrorConfiguration: Sendable, Equatable {
    /// `<base>`, default `gattway`.
    public var baseTopic: String
    /// `<dev>`: the config's `device.id`.
    public var deviceID: String
    /// Human name of the device in Home Assistant.
    public var deviceName: String
    public var characteristics: [MirrorCharacteristic]
    /// Home Assistant discovery prefix; nil turns discovery off.
    public var discoveryPrefix: String?
    /// QoS of value publications (`mqtt.qos`).
    public var valueQoS: MQTTQoS
    /// Whether value publications are retained (`mqtt.retain`); only retained values are
    /// re-published on reconnection.
    public var retainValues: Bool
    /// gattway's version, on the Home Assistant device and as the discovery's origin.
    public var softwareVersion: String

    public init(
        baseTopic: String = "gattway", deviceID: String, deviceName: String? = nil,
        characteristics: [MirrorCharacteristic], discoveryPrefix: String? = "homeassistant",
        valueQoS: MQTTQoS = .atLeastOnce, retainValues: Bool = true, softwareVersion: String
    ) {
        self.baseTopic = baseTopic
        self.deviceID = deviceID
        self.deviceName = deviceName ?? deviceID
        self.characteristics = characteristics
        self.discoveryPrefix = discoveryPrefix
        self.valueQoS = valueQoS
        self.retainValues = retainValues
        self.softwareVersion = softwareVersion
    }
}

public enum MirrorLinkSecurity: String, Sendable, Equatable {
    case none
    case encrypted
    /// Encrypted with an authenticated (MITM-protected) key.
    case authenticated
}

public struct MirrorCentral: Sendable, Equatable {
    /// Bluetooth address as `AA:BB:CC:DD:EE:FF`.
    public var address: String
    public var mtu: Int
    public var security: MirrorLinkSecurity
    /// The link is encrypted with a key stored in a bond.
    public var bonded: Bool
    public var since: Date

    public init(address: String, mtu: Int, security: MirrorLinkSecurity, bonded: Bool = false, since: Date) {
        self.address = address
        self.mtu = mtu
        self.security = security
        self.bonded = bonded
        self.since = since
    }
}

public enum MirrorWriteKind: String, Sendable, Equatable {
    /// ATT Write Request (answered).
    case request
    /// ATT Write Command (write without response).
    case command
    /// Prepared (long or reliable) write executed as a batch.
    case prepared
    /// ATT Signed Write Command.
    case signed
}

public enum MirrorSubscriptionKind: String, Sendable, Equatable {
    case notify
    case indicate
}

/// The peripheral's overall state for `<base>/<dev>/state`.
public struct MirrorPeripheralState: Sendable, Equatable {
    /// `unknown`, `resetting`, `unsupported`, `unauthorized`, `poweredOff`, `poweredOn`.
    public var state: String
    public var advertising: Bool
    /// Named counters (reads, writes, notifications, ...), rendered with keys sorted.
    public var counters: [String: Int]
    /// Seconds since the gateway started; the MQTT service sets it when it publishes.
    public var uptime: Int
    /// Events waiting in the MQTT outbox; the MQTT service sets it when it publishes.
    public var outbox: Int
    /// Durable events the broker refused (each also published on `error`); the MQTT service sets it.
    public var refused: Int
    /// Whether new centrals may pair now (a pairing window is open, or `pairing: open`).
    public var pairing: Bool
    /// The sensors whose readings are not current, with why.
    public var unavailable: [String: String]

    public init(
        state: String, advertising: Bool, counters: [String: Int] = [:], uptime: Int = 0, outbox: Int = 0,
        refused: Int = 0, pairing: Bool = false, unavailable: [String: String] = [:]
    ) {
        self.pairing = pairing
        self.state = state
        self.advertising = advertising
        self.counters = counters
        self.unavailable = unavailable
        self.uptime = uptime
        self.outbox = outbox
        self.refused = refused
    }
}

/// What the gateway tells the mirror.
public enum MirrorEvent: Sendable, Equatable {
    case peripheralState(MirrorPeripheralState)
    /// A characteristic's value changed (from a sensor, a central write, `/set` or a source topic).
    case valueChanged(MirrorCharacteristicID, value: MirrorValue, raw: [UInt8], at: Date)
    /// A characteristic's value is no longer current (`unavailable`: why), or is again (nil).
    case availabilityChanged(MirrorCharacteristicID, unavailable: String?)
    /// A central connected.
    case centralConnected(MirrorCentral)
    /// A connected central's ATT_MTU changed (an MTU exchange); the rest of what is known of it
    /// (security, `since`) stays.
    case centralMTUChanged(address: String, mtu: Int)
    /// A connected central's link security changed (encryption, pairing, a bond stored); its MTU
    /// and `since` stay.
    case centralSecurityChanged(address: String, security: MirrorLinkSecurity, bonded: Bool)
    case centralDisconnected(address: String)
    case subscribed(MirrorCharacteristicID, central: String, kind: MirrorSubscriptionKind)
    case unsubscribed(MirrorCharacteristicID, central: String)
    case written(MirrorCharacteristicID, value: MirrorValue, central: String, kind: MirrorWriteKind, at: Date)
    /// A central's write to an output was acknowledged but could not drive the line.
    case outputFailed(MirrorCharacteristicID, central: String, reason: String, at: Date)
    /// A pairing waits for the user (`MirrorPairingPrompt`).
    case pairing(central: String, prompt: MirrorPairingPrompt, at: Date)
}

/// What a pairing asks of the user, as 6 digits.
public enum MirrorPairingPrompt: Sendable, Equatable {
    /// Passkey Entry: type this on the central. Only a random passkey: a fixed one from the
    /// configuration is never published.
    case passkey(String)
    /// Numeric Comparison: if the central shows this number too, press the confirm button.
    case compare(String)
}

/// What the mirror hands back to the gateway from MQTT.
public enum MirrorInbound: Sendable, Equatable {
    /// A payload on a characteristic's `/set` topic, to validate and apply.
    case set(MirrorCharacteristicID, payload: [UInt8])
    /// A payload on a source topic for the characteristics that take their value from it.
    case sourceValue([MirrorCharacteristicID], payload: [UInt8])
    /// Home Assistant restarted: discovery must be published again.
    case homeAssistantOnline
    /// A per-entity discovery document of earlier gattway versions still retained on this topic for an
    /// entity the device document does not have (a sensor removed since): to clear, so Home
    /// Assistant removes the entity.
    case stalePerEntityDiscovery(String)
    /// A retained centrals or subscribers message an earlier run left that is no longer true (a
    /// phone listed that is not connected): this message, published, corrects or clears it.
    case staleRetained(MQTTMessage)
    /// Not a topic the gateway accepts writes on.
    case ignored
}

/// The gateway's answer to a `/set` payload.
public enum MirrorSetResult: Sendable, Equatable {
    case accepted
    /// Nothing was changed; `reason` is published on `<base>/<dev>/error`.
    case rejected(reason: String)
}

/// What the mirror asks the MQTT side to do.
public enum MirrorAction: Sendable, Equatable {
    /// `durable`: a QoS 1 event that goes through the persistent outbox (never lost); otherwise
    /// state that is simply re-published on reconnect.
    case publish(MQTTMessage, durable: Bool)
    case subscribe(String)
    case unsubscribe(String)
}

extension HomeAssistantEntity {
    /// `expire_after` for `duration`: whole seconds (what Home Assistant takes), rounded up.
    public static func expireAfter(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds + (attoseconds > 0 ? 1 : 0)
    }
}
