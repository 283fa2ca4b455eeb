/// Home Assistant MQTT discovery documents for the mirror
/// (`<prefix>/<component>/<node>/<object>/config`, retained).
struct HomeAssistantDiscovery {
    let configuration: MirrorConfiguration
    let topics: MirrorTopics

    var messages: [MQTTMessage] {
        guard let prefix = configuration.discoveryPrefix else { return [] }
        let node = "gattway_\(Self.identifier(configuration.deviceID))"
        var result: [MQTTMessage] = []
        for characteristic in configuration.characteristics {
            guard let entity = characteristic.homeAssistant else { continue }
            let object = Self.identifier("\(characteristic.id.service)_\(characteristic.id.characteristic)")
            var members: [(String, JSONText)] = [
                ("name", .string(entity.name)),
                ("unique_id", .string("\(node)_\(object)")),
                ("state_topic", .string(topics.value(characteristic.id)))
            ]
            if let template = Self.valueTemplate(entity.kind, characteristic.payloadStyle) {
                members.append(("value_template", .string(template)))
            }
            if let deviceClass = entity.deviceClass { members.append(("device_class", .string(deviceClass))) }
            if let unit = entity.unit { members.append(("unit_of_measurement", .string(unit))) }
            if let heartbeat = characteristic.heartbeat, entity.kind != .switch {
                members.append(("expire_after", .integer(Self.expireAfter(heartbeat))))
            }
            if entity.kind == .switch {
                members += [
                    ("command_topic", .string(topics.set(characteristic.id))),
                    ("payload_on", .string("true")), ("payload_off", .string("false")),
                    ("state_on", .string("true")), ("state_off", .string("false"))
                ]
            }
            members += availability + [("device", device(node))]
            result.append(
                MQTTMessage(
                    topic: "\(prefix)/\(entity.kind.rawValue)/\(node)/\(object)/config",
                    payload: JSONText.object(members).bytes, retain: true))
        }
        let diagnostic: [(String, JSONText)] =
            [
                ("name", .string("Connected centrals")),
                ("unique_id", .string("\(node)_connected_centrals")),
                ("state_topic", .string(topics.state)),
                ("value_template", .string("{{ value_json.centrals | length }}")),
                ("entity_category", .string("diagnostic")),
                ("icon", .string("mdi:cellphone-link"))
            ] + availability + [("device", device(node))]
        result.append(
            MQTTMessage(
                topic: "\(prefix)/sensor/\(node)/connected_centrals/config",
                payload: JSONText.object(diagnostic).bytes, retain: true))
        return result
    }

    private var availability: [(String, JSONText)] {
        [
            ("availability_topic", .string(topics.availability)),
            ("payload_available", .string("online")), ("payload_not_available", .string("offline"))
        ]
    }

    private func device(_ node: String) -> JSONText {
        .object([
            ("identifiers", .array([.string(node)])), ("name", .string(configuration.deviceName)),
            ("manufacturer", .string("gattway")), ("model", .string("BLE GATT gateway"))
        ])
    }

    /// JSON-style values carry `{"value": ...}`; binary sensors and switches map the boolean to
    /// the state strings Home Assistant compares against.
    private static func valueTemplate(_ kind: HomeAssistantEntity.Kind, _ style: MirrorPayloadStyle) -> String? {
        guard style == .json else { return nil }
        return switch kind {
        case .sensor: "{{ value_json.value }}"
        case .binarySensor: "{{ 'ON' if value_json.value else 'OFF' }}"
        case .switch: "{{ 'true' if value_json.value else 'false' }}"
        }
    }

    /// Seconds without a value after which Home Assistant shows a sensor as unavailable: three
    /// heartbeats, so one late or lost publication is not an outage; whole seconds (what
    /// `expire_after` takes), rounded up.
    static func expireAfter(_ heartbeat: Duration) -> Int64 {
        let (seconds, attoseconds) = (heartbeat * 3).components
        return seconds + (attoseconds > 0 ? 1 : 0)
    }

    /// Home Assistant node and object ids allow `[a-zA-Z0-9_-]` only.
    static func identifier(_ text: String) -> String {
        String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") ? $0 : "_" })
    }
}
