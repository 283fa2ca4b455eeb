import BluetoothGATT
import Config
import FoundationEssentials
import Glibc
import Logging
import MQTTClient
import MQTTMirror
import Sensors
import Values

/// The configuration's MQTT settings as the MQTT layer takes them.
public enum MirrorMapping {
    /// One mirrored characteristic per configured one: `/set` accepted unless the value is fixed,
    /// MQTT-sourced characteristics with their source topic, Home Assistant entities for sensors,
    /// the notify heartbeat (`max_interval`) for the value topic too.
    public static func mirrorConfiguration(
        _ config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout
    )
        -> MirrorConfiguration
    {
        let characteristics = layout.characteristics.values.sorted { $0.ref < $1.ref }.map { characteristic -> MirrorCharacteristic in
            var sourceTopic: String?
            var acceptsSet = true
            var isEvent = false
            var fromSensor = false
            switch characteristic.config.source {
            case .mqtt(let topic): sourceTopic = topic
            case .fixed: acceptsSet = false
            case .sensor(_, let reading):
                isEvent = reading.isEvent
                fromSensor = true
            case .written: break
            }
            return MirrorCharacteristic(
                id: id(characteristic),
                payloadStyle: mqtt.payload, acceptsSet: acceptsSet,
                sourceTopic: sourceTopic, homeAssistant: entity(characteristic, config: config),
                heartbeat: characteristic.config.notify.maxInterval, isEvent: isEvent,
                reportsAvailability: fromSensor && !isEvent)
        }
        return MirrorConfiguration(
            baseTopic: mqtt.baseTopic, deviceID: config.device.id,
            deviceName: config.device.name, characteristics: characteristics,
            discoveryPrefix: mqtt.discoveryPrefix,
            valueQoS: MQTTQoS(rawValue: Int32(mqtt.qos)) ?? .atLeastOnce,
            retainValues: mqtt.retain, softwareVersion: GattwayVersion.current)
    }

    public static func clientConfiguration(_ mqtt: MQTTConfig) -> MQTTClientConfiguration {
        // An `mqtts://` broker without `tls:` verifies against the system's trust store.
        let tls = mqtt.tls ?? (mqtt.broker.usesTLS ? MQTTTLSConfiguration() : nil)
        return MQTTClientConfiguration(
            host: mqtt.broker.host, port: Int(mqtt.broker.port),
            protocolVersion: mqtt.protocolVersion, clientID: mqtt.clientID,
            keepalive: mqtt.keepalive, tls: tls,
            credentials: mqtt.username.map { MQTTCredentials(username: $0, password: mqtt.password) })
    }

    public static func id(_ characteristic: GATTLayout.Characteristic) -> MirrorCharacteristicID {
        MirrorCharacteristicID(service: characteristic.serviceName, characteristic: characteristic.name)
    }

    /// The entity for a characteristic (`HomeAssistantDomain.of`), with what gattway knows of it
    /// (device class, unit, state class, display precision, a number's range, a text's length)
    /// and the configuration's `homeassistant:` changes on top.
    static func entity(_ characteristic: GATTLayout.Characteristic, config: GatewayConfig) -> HomeAssistantEntity? {
        let settings = characteristic.config
        var sensor: SensorConfig?
        var reading = SensorReading.value
        if case .sensor(let id, let sensorReading) = settings.source {
            sensor = config.sensor(id: id)
            reading = sensorReading
        }
        guard let domain = HomeAssistantDomain.of(settings, sensor: sensor) else { return nil }
        let changes = settings.homeAssistant ?? HomeAssistantOverride()
        let unit = changes.unit ?? settings.unit.map(\.symbol).flatMap { $0.isEmpty ? nil : $0 }
        var entity = HomeAssistantEntity(
            domain: domain, name: changes.name ?? characteristic.name, unit: unit, icon: changes.icon,
            // Earlier gattway versions announced sensors' entities on their own topics; presses
            // had none, so there is nothing to migrate.
            enabled: changes.enabled ?? true, announcedPerEntity: sensor != nil && domain != .event)
        let encoding = settings.encoding
        switch domain {
        case .sensor:
            let isTotal = sensor?.kind.isTotal == true
            entity.deviceClass =
                changes.deviceClass
                ?? measuredDeviceClass(
                    reading: reading, unit: settings.unit, names: [sensor?.id ?? "", characteristic.name], isTotal: isTotal)
            entity.stateClass = changes.stateClass ?? (isTotal ? "total_increasing" : "measurement")
            if encoding.format.integerRange != nil { entity.displayPrecision = max(0, -Int(encoding.exponent)) }
        case .binarySensor:
            entity.deviceClass = changes.deviceClass ?? binaryDeviceClass([sensor?.id ?? "", characteristic.name])
        case .switch:
            entity.deviceClass = changes.deviceClass ?? (sensor == nil ? "switch" : "outlet")
        case .number:
            entity.deviceClass =
                changes.deviceClass
                ?? measuredDeviceClass(reading: reading, unit: settings.unit, names: [sensor?.id ?? "", characteristic.name])
            entity.range = numberRange(encoding)
        case .text:
            entity.maxLength = encoding.maximumLength
        case .event:
            entity.unit = nil  // its state is the time of the last event
            entity.deviceClass = changes.deviceClass ?? "button"
            entity.eventTypes = pressEvents(sensor).map {
                HomeAssistantEntity.EventType(code: Int($0.rawValue), name: $0.eventType, triggerType: triggerType($0))
            }
        }
        entity.expireAfter = changes.expireAfter.map(HomeAssistantEntity.expireAfter)
        return entity
    }

    /// The presses a binary sensor tells apart (`press:`).
    private static func pressEvents(_ sensor: SensorConfig?) -> [PressEvent] {
        sensor?.kind.pressEvents ?? []
    }

    /// Home Assistant's device trigger type for a press.
    private static func triggerType(_ press: PressEvent) -> String {
        switch press {
        case .single: "button_short_press"
        case .double: "button_double_press"
        case .long: "button_long_press"
        }
    }

    /// The device class Home Assistant has for what the value measures, when the reading or
    /// the unit says it: every unit Home Assistant knows a sensor device class for
    /// (`DEVICE_CLASS_UNITS` in its `sensor/const.py`), and only a class that takes the entity's
    /// state class (`total`: a counter's; otherwise `measurement`), so Home Assistant accepts
    /// the entity as it is. Where a unit fits several classes, the words of the sensor id and
    /// characteristic name (`names`) choose (`wind` for a wind speed, `battery` for a %, `co2`
    /// for ppm); where they do not say, a unit shared by several classes gets none.
    static func measuredDeviceClass(
        reading: SensorReading, unit: GATTUnit?, names: [String] = [], isTotal: Bool = false
    ) -> String? {
        switch reading {
        case .temperature: return "temperature"
        case .humidity: return "humidity"
        case .highTime: return "duration"
        case .dutyCycle, .press: return nil
        case .value: break
        }
        let words = Set(names.flatMap { $0.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init) })
        func named(_ candidates: String...) -> Bool { !words.isDisjoint(with: candidates) }
        let deviceClass: String? =
            switch unit {
            case .metre: "distance"
            case .kilogram: "weight"
            case .second, .minute, .hour, .day: "duration"
            case .ampere: "current"
            case .celsius, .kelvin, .fahrenheit: "temperature"
            case .metresPerSecond, .kilometresPerHour: named("wind", "anemometer", "gust") ? "wind_speed" : "speed"
            case .hertz: "frequency"
            case .pascal, .bar, .millimetreOfMercury:
                named("atmospheric", "barometer", "barometric", "baro") ? "atmospheric_pressure" : "pressure"
            case .joule, .kilowattHour: isTotal ? "energy" : "energy_storage"
            case .watt: "power"
            case .volt: "voltage"
            case .lux: "illuminance"
            case .litre: isTotal ? (named("water") ? "water" : "volume") : "volume_storage"
            case .percent:
                named("humidity", "rh") ? "humidity" : named("battery") ? "battery" : named("moisture", "soil") ? "moisture" : nil
            case .wattsPerSquareMetre: "irradiance"
            case .litresPerSecond: "volume_flow_rate"
            case .decibel: named("rssi", "signal") ? "signal_strength" : "sound_pressure"
            case .partsPerMillion:
                named("co2", "carbon_dioxide", "dioxide")
                    ? "carbon_dioxide"
                    : named("co", "monoxide")
                        ? "carbon_monoxide"
                        : named("voc", "tvoc") ? "volatile_organic_compounds_parts" : nil
            case .partsPerBillion: "volatile_organic_compounds_parts"
            // Home Assistant's one class in degrees, wind_direction, takes no state class.
            default: nil
            }
        guard let deviceClass, isTotal else { return deviceClass }
        // Only these classes take `total`/`total_increasing` (`DEVICE_CLASS_STATE_CLASSES`).
        return ["distance", "weight", "duration", "energy", "volume", "water"].contains(deviceClass) ? deviceClass : nil
    }

    /// What a binary input is, from the words of its sensor id and characteristic name
    /// (`door`, `front_window`, `pir`, ...); nil when they do not say.
    public static func binaryDeviceClass(_ names: [String]) -> String? {
        let words = Set(names.flatMap { $0.lowercased().split(whereSeparator: { !$0.isLetter }).map(String.init) })
        let classes: [(words: [String], deviceClass: String)] = [
            (["door", "contact", "reed"], "door"), (["window"], "window"),
            (["pir", "motion", "movement"], "motion"), (["occupancy", "presence"], "occupancy"),
            (["smoke"], "smoke"), (["leak", "water", "flood", "moisture"], "moisture"),
            (["vibration"], "vibration"), (["tamper"], "tamper"), (["gas"], "gas")
        ]
        if words.contains("garage") { return "garage_door" }
        return classes.first { !words.isDisjoint(with: $0.words) }?.deviceClass
    }

    /// An integer format's whole range in steps of its resolution; a float format's
    /// ±1,000,000,000 in steps of 0.001 (the finest Home Assistant takes).
    static func numberRange(_ encoding: ValueEncoding) -> HomeAssistantEntity.NumberRange {
        guard let range = encoding.format.integerRange else {
            return HomeAssistantEntity.NumberRange(min: "-1000000000", max: "1000000000", step: "0.001")
        }
        return HomeAssistantEntity.NumberRange(
            min: encoding.decimalText(raw: range.lowerBound), max: encoding.decimalText(raw: range.upperBound),
            step: encoding.decimalText(raw: 1))
    }

    /// `none`, `encrypted`, or `authenticated` (encrypted with a MITM-protected key).
    public static func linkSecurity(_ security: LinkSecurity) -> MirrorLinkSecurity {
        guard security.isEncrypted else { return .none }
        return security.isAuthenticated ? .authenticated : .encrypted
    }

    /// The ATT write that carried a central's value, as `/written` names it.
    public static func writeKind(_ kind: GATTWriteKind) -> MirrorWriteKind {
        switch kind {
        case .request: .request
        case .command: .command
        case .prepared: .prepared
        }
    }

    /// A characteristic's bytes on air as the JSON value MQTT payloads carry, at the precision
    /// of its format (`ValueJSON.literal`).
    public static func mirrorValue(_ bytes: [UInt8], encoding: ValueEncoding) -> MirrorValue {
        MirrorValue(json: ValueJSON.literal(bytes, encoding: encoding))
    }
}

/// Between the value pipeline and the MQTT mirror: pipeline events become mirror events, and
/// MQTT's `/set` and source-topic payloads are checked against the characteristic's format
/// (`ValueJSON.parseSet`) before they reach the pipeline. An invalid `/set` changes nothing; its
/// reason goes back to the mirror, which publishes it on `<base>/<dev>/error`.
///
/// A class: the runner reaches it for every value, and a struct read from the runner's state
/// would be copied each time, its layout's references retained and released.
public final class MirrorBridge: Sendable {
    /// What an event of a characteristic needs of it: its id on MQTT and its value format.
    /// Looked up instead of the layout's characteristic, whose copy would retain every string of
    /// its configuration: this runs for every value. A class, so the look-up copies one
    /// reference out of its table, not the id's names and the format.
    private final class Mirrored: Sendable {
        let id: MirrorCharacteristicID
        let encoding: ValueEncoding

        init(id: MirrorCharacteristicID, encoding: ValueEncoding) {
            self.id = id
            self.encoding = encoding
        }
    }

    public let layout: GATTLayout
    private let refs: [MirrorCharacteristicID: CharacteristicRef]
    /// Found by the ref's positions, not hashed (`CharacteristicTable`).
    private let mirrored: CharacteristicTable<Mirrored>
    private let address: @Sendable (CentralID) -> String

    /// - Parameter address: a central's Bluetooth address for topics (`AA:BB:...`).
    public init(layout: GATTLayout, address: @escaping @Sendable (CentralID) -> String) {
        self.layout = layout
        self.address = address
        var refs: [MirrorCharacteristicID: CharacteristicRef] = [:]
        var mirrored = CharacteristicTable<Mirrored>()
        for characteristic in layout.characteristics.values {
            let id = MirrorMapping.id(characteristic)
            refs[id] = characteristic.ref
            mirrored[characteristic.ref] = Mirrored(id: id, encoding: characteristic.config.encoding)
        }
        self.refs = refs
        self.mirrored = mirrored
    }

    /// The mirror's event for `event`; nil when the characteristic it names is not one of this
    /// bridge's layout: events of the layout before a reload may still be on their way to a
    /// mirror made for the new one. The characteristic is looked up once per event: this runs for
    /// every value.
    public func mirrorEvent(_ event: PipelineEvent, at date: Date) -> MirrorEvent? {
        switch event {
        case .valueChanged(let ref, let bytes):
            guard let characteristic = mirrored[ref] else { return nil }
            return .valueChanged(
                characteristic.id, value: MirrorMapping.mirrorValue(bytes, encoding: characteristic.encoding), raw: bytes,
                at: date)
        case .availabilityChanged(let ref, let reason):
            guard let characteristic = mirrored[ref] else { return nil }
            return .availabilityChanged(characteristic.id, unavailable: reason)
        case .centralConnected(let central, let mtu):
            return .centralConnected(MirrorCentral(address: address(central), mtu: mtu, security: .none, since: date))
        case .mtuChanged(let central, let mtu):
            return .centralMTUChanged(address: address(central), mtu: mtu)
        case .securityChanged(let central, let security):
            return .centralSecurityChanged(
                address: address(central), security: MirrorMapping.linkSecurity(security),
                bonded: security.isBonded)
        case .centralDisconnected(let central):
            return .centralDisconnected(address: address(central))
        case .subscribed(let ref, let central, let kind):
            guard let characteristic = mirrored[ref] else { return nil }
            return .subscribed(characteristic.id, central: address(central), kind: kind == .indication ? .indicate : .notify)
        case .unsubscribed(let ref, let central):
            guard let characteristic = mirrored[ref] else { return nil }
            return .unsubscribed(characteristic.id, central: address(central))
        case .written(let ref, let central, let bytes, let kind):
            guard let characteristic = mirrored[ref] else { return nil }
            return .written(
                characteristic.id, value: MirrorMapping.mirrorValue(bytes, encoding: characteristic.encoding),
                central: address(central), kind: MirrorMapping.writeKind(kind), at: date)
        case .outputFailed(let ref, let central, let reason):
            guard let characteristic = mirrored[ref] else { return nil }
            return .outputFailed(characteristic.id, central: address(central), reason: reason, at: date)
        case .status(let peripheral, let advertising, let counters, let pairing, let unavailable):
            return .peripheralState(
                MirrorPeripheralState(
                    state: peripheral, advertising: advertising,
                    counters: counters, pairing: pairing, unavailable: unavailable))
        }
    }

    /// A `/set` payload: applied when centrals may write the characteristic, gattway owns its value
    /// (not an MQTT source topic's) and the payload is valid for its format, otherwise rejected
    /// with the reason and nothing changed. MQTT gets no more than a phone: a sensor's reading is
    /// not writable, so nobody on the broker can overwrite what phones are told the sensor
    /// measured; and a value whose source is another topic belongs to whoever publishes there.
    public func set(_ id: MirrorCharacteristicID, payload: [UInt8], pipeline: ValuePipeline) async -> MirrorSetResult {
        guard let ref = refs[id], let characteristic = layout.characteristics[ref] else {
            return .rejected(reason: "no characteristic \(id)")
        }
        guard characteristic.config.properties.isWritable else {
            return .rejected(reason: "read-only: centrals cannot write \(id) (its properties have no write), so /set cannot either")
        }
        if case .mqtt(let topic) = characteristic.config.source {
            return .rejected(reason: "\(id) takes its value from MQTT topic \(topic): publish there, not to /set")
        }
        do throws(ValueError) {
            let (value, _) = try ValueJSON.parseSet(payload, encoding: characteristic.config.encoding)
            if let failure = await pipeline.externalValue(value, for: ref) { return .rejected(reason: failure) }
            return .accepted
        } catch {
            return .rejected(reason: error.description)
        }
    }

    /// A payload on a source topic, for each characteristic taking its value from it; a payload
    /// that does not fit a characteristic's format is logged and skipped.
    public func sourceValue(
        _ ids: [MirrorCharacteristicID], payload: [UInt8], pipeline: ValuePipeline,
        logger: Logger
    ) async {
        for id in ids {
            guard let ref = refs[id], let characteristic = layout.characteristics[ref] else { continue }
            do throws(ValueError) {
                let (value, _) = try ValueJSON.parseSet(payload, encoding: characteristic.config.encoding)
                await pipeline.externalValue(value, for: ref)
            } catch {
                logger.warning(
                    "MQTT source value rejected",
                    metadata: [
                        "characteristic": "\(id)",
                        "reason": "\(error)"
                    ])
            }
        }
    }
}
