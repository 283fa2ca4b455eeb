/// Home Assistant MQTT discovery for the mirror: one retained device document
/// (`<prefix>/device/gattway_<dev>/config`) carrying the device, the origin and one component per
/// entity, so Home Assistant shows one device with all of them; a component published before
/// and no longer configured goes out as `{"p": <platform>}`, which removes its entity.
///
/// earlier gattway versions announced each entity on its own topic (`<prefix>/<kind>/gattway_<dev>/<object>/config`).
/// Those entities keep their entity ids through Home Assistant's migration: `{"migrate_discovery": true}`
/// on each old topic the broker still holds (`DiscoverySurvey`; Home Assistant unloads the entity and keeps it in its registry), the old
/// topic cleared, then the device document (same `unique_id`s). The component keys are the old
/// object ids, so Home Assistant gives a component the old entity's discovery id
/// (`gattway_<dev> <object>`), which is why the old topic is cleared before the document: a
/// message there afterwards reaches the new entity, and Home Assistant warns of a conflict.
struct HomeAssistantDiscovery {
    let configuration: MirrorConfiguration
    let topics: MirrorTopics
    /// Components of earlier documents; those the configuration no longer has are published as
    /// `{"p": <platform>}`, which is how Home Assistant removes a component's entity (leaving it
    /// out does not).
    var published: Set<HomeAssistantComponent> = []

    static let supportURL = "https://github.com/gattway/gattway"
    static let migratePayload = Array(#"{"migrate_discovery":true}"#.utf8)

    /// `gattway_<dev>`: the device's identifier and the node level of its topics.
    var node: String { "gattway_\(Self.identifier(configuration.deviceID))" }

    var deviceTopic: String? {
        configuration.discoveryPrefix.map { "\($0)/device/\(node)/config" }
    }

    /// The per-entity topics of earlier gattway versions, with this configuration: `<prefix>/+/gattway_<dev>/+/config`
    /// matches every one, including those of sensors removed since.
    var perEntityTopicFilter: String? {
        configuration.discoveryPrefix.map { "\($0)/+/\(node)/+/config" }
    }

    /// Whether `topic` is one of the per-entity topics (`perEntityTopicFilter`).
    func isPerEntityTopic(_ topic: String) -> Bool {
        guard let prefix = configuration.discoveryPrefix, topic.hasPrefix(prefix + "/") else { return false }
        let levels = topic.dropFirst(prefix.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        return levels.count == 4 && levels[1] == node && levels[3] == "config" && levels[0] != "device"
    }

    /// The device document, preceded by the migration of the per-entity topics earlier gattway
    /// versions used for these entities that are among `held` (the per-entity topics the broker
    /// holds a document on): each gets the migrate payload, then is cleared.
    func messages(migrating held: Set<String> = []) -> [MQTTMessage] {
        guard let deviceTopic else { return [] }
        let document = MQTTMessage(topic: deviceTopic, payload: deviceDocument.bytes, retain: true)
        let old = perEntityTopics(components.filter(\.announcedPerEntity)).filter(held.contains)
        return old.flatMap {
            [
                MQTTMessage(topic: $0, payload: Self.migratePayload, retain: true),
                MQTTMessage(topic: $0, payload: [], retain: true)
            ]
        } + [document]
    }

    /// The per-entity topics with the discovery ids of `components`.
    private func perEntityTopics(_ components: [Component]) -> [String] {
        guard let prefix = configuration.discoveryPrefix else { return [] }
        return components.map { "\(prefix)/\($0.platform)/\(node)/\($0.id)/config" }
    }

    /// A per-entity document still retained on `topic` is stale and is cleared, unless it has the
    /// discovery id of one of the document's components: that one was cleared by the migration,
    /// and clearing it again would reach the component's entity.
    func isStalePerEntityTopic(_ topic: String) -> Bool {
        isPerEntityTopic(topic) && !perEntityTopics(components).contains(topic)
    }

    var deviceDocument: JSONText {
        .object(
            [
                (
                    "dev",
                    .object([
                        ("identifiers", .array([.string(node)])), ("name", .string(configuration.deviceName)),
                        ("manufacturer", .string("gattway")), ("model", .string("BLE GATT gateway")),
                        ("sw_version", .string(configuration.softwareVersion))
                    ])
                ),
                (
                    "o",
                    .object([
                        ("name", .string("gattway")), ("sw_version", .string(configuration.softwareVersion)),
                        ("support_url", .string(Self.supportURL))
                    ])
                ),
                ("cmps", .object(components.map { ($0.id, .object($0.members)) } + removals))
            ] + availability)
    }

    /// What the configuration has: the components to remember once published.
    var current: Set<HomeAssistantComponent> {
        Set(components.map { HomeAssistantComponent(platform: $0.platform, id: $0.id) })
    }

    private var removals: [(String, JSONText)] {
        let ids = Set(components.map(\.id))
        return published.filter { !ids.contains($0.id) }.sorted { $0.id < $1.id }.map {
            ($0.id, .object([("p", .string($0.platform))]))
        }
    }

    struct Component {
        let id: String
        let platform: String
        let members: [(String, JSONText)]
        let announcedPerEntity: Bool
    }

    var components: [Component] {
        configuration.characteristics.flatMap { characteristic -> [Component] in
            guard let component = component(characteristic) else { return [] }
            return [component] + deviceTriggers(characteristic)
        } + diagnostics
    }

    private func objectID(_ id: MirrorCharacteristicID) -> String {
        Self.identifier("\(id.service)_\(id.characteristic)")
    }

    private func component(_ characteristic: MirrorCharacteristic) -> Component? {
        guard let entity = characteristic.homeAssistant else { return nil }
        // A raw payload is the event code's byte, which no template of Home Assistant reads.
        if entity.domain == .event, characteristic.payloadStyle != .json { return nil }
        let object = objectID(characteristic.id)
        var members: [(String, JSONText)] = [
            ("p", .string(entity.domain.rawValue)), ("name", .string(entity.name)),
            ("unique_id", .string("\(node)_\(object)")), ("state_topic", .string(topics.value(characteristic.id)))
        ]
        if entity.domain == .event {
            members += [
                ("event_types", .array(entity.eventTypes.map { .string($0.name) })),
                ("value_template", .string(#"{"event_type": "{{ "# + Self.eventName(entity.eventTypes) + #" }}"}"#))
            ]
        } else if let template = Self.valueTemplate(entity.domain, characteristic.payloadStyle) {
            members.append(("value_template", .string(template)))
        }
        if let deviceClass = entity.deviceClass { members.append(("device_class", .string(deviceClass))) }
        if let unit = entity.unit { members.append(("unit_of_measurement", .string(unit))) }
        if let stateClass = entity.stateClass { members.append(("state_class", .string(stateClass))) }
        if let precision = entity.displayPrecision {
            members.append(("suggested_display_precision", .integer(Int64(precision))))
        }
        if let icon = entity.icon { members.append(("icon", .string(icon))) }
        if entity.domain == .sensor || entity.domain == .binarySensor,
            let expireAfter = entity.expireAfter ?? characteristic.heartbeat.map(Self.expireAfter)
        {
            members.append(("expire_after", .integer(expireAfter)))
        }
        switch entity.domain {
        case .sensor, .binarySensor, .event: break
        case .switch:
            members += [
                ("command_topic", .string(topics.set(characteristic.id))),
                ("payload_on", .string("true")), ("payload_off", .string("false")),
                ("state_on", .string("true")), ("state_off", .string("false"))
            ]
        case .text:
            // Home Assistant sends the text as it is; `/set` takes JSON.
            members += [
                ("command_topic", .string(topics.set(characteristic.id))),
                ("command_template", .string("{{ value | to_json }}"))
            ]
            if let maxLength = entity.maxLength { members.append(("max", .integer(Int64(maxLength)))) }
        case .number:
            members.append(("command_topic", .string(topics.set(characteristic.id))))
            if let range = entity.range {
                members += [("min", .literal(range.min)), ("max", .literal(range.max)), ("step", .literal(range.step))]
            }
            members.append(("mode", .string("box")))
        }
        if !entity.enabled { members.append(("enabled_by_default", .bool(false))) }
        if characteristic.reportsAvailability {
            // Replaces the document's own list (a component's option overrides the shared one):
            // the entity is available while the gateway is online and its sensor answers.
            members += [
                ("availability", .array([gatewayAvailability, Self.availabilityEntry(topics.availability(characteristic.id))])),
                ("availability_mode", .string("all"))
            ]
        }
        return Component(
            id: object, platform: entity.domain.rawValue, members: members,
            announcedPerEntity: entity.announcedPerEntity)
    }

    /// An event entity's events as device triggers too (`device_automation`, one per event
    /// type), which automations pick from the device's triggers: `type` says the press
    /// (`button_short_press`, ...), `subtype` the button (the entity's name).
    private func deviceTriggers(_ characteristic: MirrorCharacteristic) -> [Component] {
        guard let entity = characteristic.homeAssistant, entity.domain == .event, characteristic.payloadStyle == .json
        else { return [] }
        let object = objectID(characteristic.id)
        return entity.eventTypes.map { event in
            Component(
                id: "\(object)_\(event.name)", platform: "device_automation",
                members: [
                    ("p", .string("device_automation")), ("automation_type", .string("trigger")),
                    ("topic", .string(topics.value(characteristic.id))),
                    ("type", .string(event.triggerType)), ("subtype", .string(entity.name)),
                    ("payload", .string(event.name)),
                    ("value_template", .string("{{ " + Self.eventName(entity.eventTypes) + " }}"))
                ],
                announcedPerEntity: false)
        }
    }

    /// A Jinja expression naming the event whose code `{"value": <code>}` carries.
    private static func eventName(_ events: [HomeAssistantEntity.EventType]) -> String {
        "{" + events.map { "\($0.code): '\($0.name)'" }.joined(separator: ", ") + "}.get(value_json.value, '')"
    }

    /// The gateway's own state, from the `state` topic (published on every change and every
    /// minute), as diagnostic sensors, and whether new phones may pair now (`Pairing`).
    private var diagnostics: [Component] {
        func sensor(
            _ id: String, _ name: String, _ template: String, _ extra: [(String, JSONText)], announcedPerEntity: Bool = false
        ) -> Component {
            Component(
                id: id, platform: "sensor",
                members: [
                    ("p", .string("sensor")), ("name", .string(name)), ("unique_id", .string("\(node)_\(id)")),
                    ("state_topic", .string(topics.state)), ("value_template", .string(template)),
                    ("entity_category", .string("diagnostic"))
                ] + extra,
                announcedPerEntity: announcedPerEntity)
        }
        return [
            sensor(
                "connected_centrals", "Connected centrals", "{{ value_json.centrals | length }}",
                [("icon", .string("mdi:cellphone-link"))], announcedPerEntity: true),
            sensor(
                "notifications_sent", "Notifications sent", "{{ value_json.counters.get('sent', 0) }}",
                [("state_class", .string("total_increasing")), ("icon", .string("mdi:bell-ring-outline"))]),
            sensor(
                "values_dropped", "Values dropped", "{{ value_json.counters.get('dropped', 0) }}",
                [("state_class", .string("total_increasing")), ("icon", .string("mdi:delete-alert-outline"))]),
            sensor(
                "mqtt_outbox", "MQTT outbox", "{{ value_json.outbox }}",
                [("state_class", .string("measurement")), ("icon", .string("mdi:tray-full"))]),
            sensor(
                "uptime", "Uptime", "{{ value_json.uptime }}",
                [
                    ("device_class", .string("duration")), ("unit_of_measurement", .string("s")),
                    ("state_class", .string("total_increasing"))
                ]),
            sensor(
                "controller_state", "Controller state", "{{ value_json.state }}",
                [("icon", .string("mdi:bluetooth-settings"))]),
            Component(
                id: "pairing", platform: "binary_sensor",
                members: [
                    ("p", .string("binary_sensor")), ("name", .string("Pairing")),
                    ("unique_id", .string("\(node)_pairing")), ("state_topic", .string(topics.state)),
                    ("value_template", .string("{{ 'ON' if value_json.pairing else 'OFF' }}")),
                    ("entity_category", .string("diagnostic")), ("icon", .string("mdi:bluetooth-connect"))
                ], announcedPerEntity: false)
        ]
    }

    /// The document's availability, shared by every component that has none of its own: the
    /// gateway's topic, as a list (`availability_topic` cannot stand beside a component's
    /// `availability` list: Home Assistant refuses the two together).
    private var availability: [(String, JSONText)] {
        [("availability", .array([gatewayAvailability]))]
    }

    private var gatewayAvailability: JSONText { Self.availabilityEntry(topics.availability) }

    private static func availabilityEntry(_ topic: String) -> JSONText {
        .object([
            ("topic", .string(topic)), ("payload_available", .string("online")),
            ("payload_not_available", .string("offline"))
        ])
    }

    /// JSON-style values carry `{"value": ...}`; binary sensors and switches map the boolean to
    /// the state strings Home Assistant compares against.
    private static func valueTemplate(_ domain: HomeAssistantDomain, _ style: MirrorPayloadStyle) -> String? {
        guard style == .json else { return nil }
        return switch domain {
        case .sensor, .text, .number: "{{ value_json.value }}"
        case .binarySensor: "{{ 'ON' if value_json.value else 'OFF' }}"
        case .switch: "{{ 'true' if value_json.value else 'false' }}"
        case .event: nil  // built from the event types
        }
    }

    /// Seconds without a value after which Home Assistant shows a sensor as unavailable: three
    /// heartbeats, so one late or lost publication is not an outage.
    static func expireAfter(_ heartbeat: Duration) -> Int64 {
        HomeAssistantEntity.expireAfter(heartbeat * 3)
    }

    /// Home Assistant node and object ids allow `[a-zA-Z0-9_-]` only.
    static func identifier(_ text: String) -> String {
        String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
    }
}
