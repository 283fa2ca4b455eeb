import BluetoothCore
import ConfigReading
import MQTTMirror
import Notify
import Sensors
import Values

extension ConfigParser {
    func parseService(_ node: ConfigNode, references: References) -> ServiceConfig? {
        guard let m = node.mapping("services[]") else { return nil }
        let uuid = m.required("uuid")?.uuid()
        let name = m["name"]?.nonEmptyString()
        let primary = m["primary"]?.bool() ?? D.primary
        let includes =
            m["includes"]?.list()?.compactMap { item -> String? in
                guard let included = item.nonEmptyString() else { return nil }
                if included == name {
                    item.report("a service cannot include itself")
                } else if !references.serviceNames.contains(included) {
                    item.report(
                        "no service named \"\(included)\""
                            + Suggestion.hint(for: included, among: references.serviceNames))
                }
                return included
            } ?? []
        let characteristicNodes = m.required("characteristics")?.list() ?? []
        if characteristicNodes.isEmpty, let list = m["characteristics"], case .sequence = list.node.content {
            list.report("a service needs at least one characteristic")
        }
        var characteristics: [CharacteristicConfig] = []
        var firstLineOfName: [String: Int] = [:]
        for item in characteristicNodes {
            guard let characteristic = parseCharacteristic(item, references: references) else { continue }
            if let name = characteristic.name {
                let path = item.path.key("name")
                if let first = firstLineOfName[name] {
                    context.error(
                        path, line: nil,
                        "duplicate characteristic name \"\(name)\" in this service (first at line \(first))")
                }
                firstLineOfName[name] = firstLineOfName[name] ?? context.line(of: path) ?? 0
            }
            characteristics.append(characteristic)
        }
        guard let uuid else { return nil }
        return ServiceConfig(
            uuid: uuid, name: name, primary: primary, includes: includes,
            characteristics: characteristics)
    }

    private func parseCharacteristic(_ node: ConfigNode, references: References) -> CharacteristicConfig? {
        guard let m = node.mapping("services[].characteristics[]") else { return nil }
        let (uuid, known) = parseCharacteristicType(m.required("uuid"))
        let name = m["name"]?.nonEmptyString()
        let encoding = parseEncoding(m, known: known)
        let unit = m["unit"].map(parseUnit) ?? known?.unit

        var source: ValueSource?
        if let s = m.required("source")?.mapping("services[].characteristics[].source") {
            source = parseSource(s, encoding: encoding, references: references)
        }
        var sensor: SensorConfig?
        if case .sensor(let id, _) = source { sensor = references.sensors[id] }
        let sensorIsOutput = sensor?.kind.isOutput ?? false
        let properties =
            m["properties"].map(parseProperties)
            ?? source.map { D.properties(for: $0, sensorIsOutput: sensorIsOutput) } ?? [.read]

        let permissions = parsePermissions(m["permissions"]?.mapping("services[].characteristics[].permissions"))
        if properties.isWritable, permissions.write.isOpen {
            (m["permissions"] ?? m.node).warn("writable by any central without pairing (permissions.write: open)")
        }
        let descriptors = m["descriptors"]?.list()?.compactMap(parseDescriptor) ?? []
        let notify = parseNotify(
            m["notify"]?.mapping("services[].characteristics[].notify"),
            properties: properties, encoding: encoding, source: source)
        checkSourceAgainstProperties(m, source: source, properties: properties)
        if case .sensor(_, let reading) = source, reading.isEvent, let encoding,
            encoding.format.integerRange == nil || encoding.exponent != 0
        {
            (m["format"] ?? m["exponent"] ?? m.node).report(
                "a \(reading.rawValue) reading is an event code (1 single, 2 double, 4 long): "
                    + "give an integer format without exponent, such as uint8")
        }
        if let sensor, !sensor.kind.isOutput, properties.isWritable {
            (m["properties"] ?? m.node).report(
                "sensor \"\(sensor.id)\" is an input (\(sensor.kind.name)); "
                    + "only an output sensor can be written")
        }

        guard let uuid, let encoding, let source else { return nil }
        var characteristic = CharacteristicConfig(
            uuid: uuid, name: name, properties: properties, permissions: permissions,
            encoding: encoding, unit: unit, source: source, descriptors: descriptors,
            notify: notify)
        if let node = m["homeassistant"] {
            characteristic.homeAssistant = parseHomeAssistant(
                node, domain: HomeAssistantDomain.of(characteristic, sensor: sensor), references: references)
        }
        return characteristic
    }

    /// `homeassistant:`, checked against the entity the characteristic becomes: its device
    /// class must be one Home Assistant has for that domain, a state class goes with sensors.
    private func parseHomeAssistant(
        _ node: ConfigNode, domain: HomeAssistantDomain?, references: References
    ) -> HomeAssistantOverride? {
        guard let m = node.mapping("services[].characteristics[].homeassistant") else { return nil }
        guard references.mqttConfigured else {
            return node.fail("Home Assistant entities come through MQTT discovery; add the mqtt section")
        }
        guard let domain else {
            return node.fail(
                "this characteristic gets no Home Assistant entity (only sensor sources and writable "
                    + "written values of a text, number or bool format do)")
        }
        var result = HomeAssistantOverride()
        if let value = m["device_class"], let text = value.nonEmptyString() {
            let classes = domain.deviceClasses
            if classes.contains(text) {
                result.deviceClass = text
            } else if classes.isEmpty {
                value.report("\(domain.withArticle) entity takes no device_class")
            } else {
                value.report(
                    "\"\(text)\" is not \(domain.withArticle) device class\(Suggestion.hint(for: text, among: classes))"
                        + " (see Home Assistant's \(domain.rawValue) device classes)")
            }
        }
        if let value = m["state_class"], let text = value.nonEmptyString() {
            let classes = HomeAssistantDomain.stateClasses
            if domain != .sensor {
                value.report("only sensor entities take a state_class (this one is \(domain.withArticle))")
            } else if classes.contains(text) {
                result.stateClass = text
            } else {
                value.report(
                    "\"\(text)\" is not a state class\(Suggestion.hint(for: text, among: classes)) "
                        + "(state classes: \(classes.joined(separator: ", ")))")
            }
        }
        if let value = m["unit"], let text = value.nonEmptyString() {
            if domain == .event {
                value.report("an event entity shows no unit (its state is the time of the last event)")
            } else {
                result.unit = text
            }
        }
        if let value = m["icon"], let text = value.nonEmptyString() {
            if text.hasPrefix("mdi:"), text.count > 4 {
                result.icon = text
            } else {
                value.report("\(value.shown) is not an icon name (icons are written as in mdi:thermometer)")
            }
        }
        if let value = m["expire_after"] {
            if domain == .sensor || domain == .binarySensor {
                result.expireAfter = value.duration(in: .seconds(1)...(.seconds(86_400 * 7)))
            } else {
                value.report("only sensor and binary_sensor entities expire (this one is \(domain.withArticle))")
            }
        }
        result.name = m["name"]?.nonEmptyString()
        result.enabled = m["enabled"]?.bool()
        return result
    }

    /// A UUID, or the name of an Environmental Sensing characteristic (`temperature`), whose
    /// SIG definition then supplies the encoding and unit.
    private func parseCharacteristicType(
        _ node: ConfigNode?
    )
        -> (BluetoothUUID?, EnvironmentalSensingCharacteristic?)
    {
        guard let node else { return (nil, nil) }
        if let text = node.node.scalar,
            let named = EnvironmentalSensingCharacteristic(rawValue: text)
        {
            return (named.uuid, named)
        }
        let uuid = node.uuid()
        return (uuid, EnvironmentalSensingCharacteristic.allCases.first { $0.uuid == uuid })
    }

    private func parseEncoding(_ m: ConfigMapping, known: EnvironmentalSensingCharacteristic?) -> ValueEncoding? {
        let exponent = m["exponent"]?.integer(Int8.self)
        let maxLength = m["max_length"]?.integer(in: 1...ValueEncoding.attributeValueLimit)
        let format: ValueFormat
        if let node = m["format"] {
            guard let name = node.string() else { return nil }
            guard let named = ValueFormat(name: name) else {
                let names = ValueFormat.allCases.map(\.rawValue) + ["sfloat", "float11073"]
                let hint = Suggestion.closest(to: name, among: names).map { "did you mean \"\($0)\"? " } ?? ""
                return node.fail("\(node.shown) is not valid; \(hint)expected one of \(names.joined(separator: ", "))")
            }
            format = named
        } else if let known {
            format = known.encoding.format
        } else {
            let names = EnvironmentalSensingCharacteristic.allCases.map { $0.uuid.description }.joined(separator: ", ")
            m.node.report("missing required key \"format\" (it may be left out only for \(names))")
            return nil
        }
        let defaultExponent = m["format"] == nil ? known?.encoding.exponent : nil
        do {
            return try ValueEncoding(
                format, exponent: exponent ?? defaultExponent ?? ConfigDefaults.exponent,
                maximumLength: maxLength ?? ValueEncoding.attributeValueLimit)
        } catch {
            (m["exponent"] ?? m["max_length"] ?? m.node).report(error.description)
            return nil
        }
    }

    private func parseUnit(_ node: ConfigNode) -> GATTUnit? {
        guard let text = node.nonEmptyString() else { return nil }
        if let unit = GATTUnit(rawValue: text) { return unit }
        if let uuid = BluetoothUUID(text), let short = uuid.uint16Value, let unit = GATTUnit(uuid16: short) {
            return unit
        }
        let hint = Suggestion.hint(for: text, among: GATTUnit.allCases.map(\.rawValue))
        node.report("\"\(text)\" is not a unit gattway knows\(hint) (see the unit list in the reference)")
        return nil
    }

    private func parseProperties(_ node: ConfigNode) -> CharacteristicProperties {
        var properties: CharacteristicProperties = []
        let names = CharacteristicProperties.names.map(\.name)
        for item in node.list() ?? [] {
            guard let text = item.nonEmptyString() else { continue }
            guard let property = CharacteristicProperties.names.first(where: { $0.name == text })?.property else {
                item.report(
                    "\"\(text)\" is not a property\(Suggestion.hint(for: text, among: names)) "
                        + "(properties: \(names.joined(separator: ", ")))")
                continue
            }
            properties.insert(property)
        }
        if properties.isEmpty, case .sequence(let raw) = node.node.content, raw.isEmpty {
            node.report("a characteristic needs at least one property")
        }
        return properties
    }

    private enum RequirementName: String, CaseIterable {
        case encrypted, authenticated, bonded
    }

    private func parsePermissions(_ m: ConfigMapping?) -> AttributePermissions {
        func requirement(_ node: ConfigNode) -> SecurityRequirement? {
            if let text = node.node.scalar {
                guard text == "open" else {
                    return node.fail("expected open or a list of encrypted, authenticated, bonded; got \(node.shown)")
                }
                return .open
            }
            guard let items = node.list() else { return nil }
            let names = Set(items.compactMap { $0.choice(RequirementName.self) })
            return SecurityRequirement(
                encrypted: names.contains(.encrypted),
                authenticated: names.contains(.authenticated),
                bonded: names.contains(.bonded))
        }
        return AttributePermissions(
            read: m?["read"].flatMap(requirement) ?? D.readPermission,
            write: m?["write"].flatMap(requirement) ?? D.writePermission)
    }

    private func parseSource(_ m: ConfigMapping, encoding: ValueEncoding?, references: References) -> ValueSource? {
        let kinds = m.order.filter { $0 != "reading" }
        if m.has("reading"), kinds != ["sensor"] {
            m["reading"]?.report("reading goes with sensor")
        }
        guard kinds.count == 1, let key = kinds.first else {
            if kinds.count > 1 {
                m.node.report("give exactly one source (found \(kinds.joined(separator: ", ")))")
            } else if case .mapping(let raw) = m.node.node.content, raw.isEmpty {
                m.node.report("give one of sensor, mqtt, static, written")
            }
            return nil
        }
        guard let value = m[key] else { return m.node.fail("\(key) needs a value") }
        switch key {
        case "sensor":
            guard let id = value.nonEmptyString() else { return nil }
            guard let sensor = references.sensor(id, report: value.report) else { return nil }
            let readings = sensor.kind.readings
            guard let node = m["reading"] else { return .sensor(id: id, reading: readings[0]) }
            guard let reading = node.choice(SensorReading.self) else { return nil }
            guard readings.contains(reading) else {
                return node.fail(
                    "sensor \"\(id)\" (\(sensor.kind.name)) has no \(reading.rawValue) reading "
                        + "(it has \(readings.map(\.rawValue).joined(separator: ", ")))")
            }
            return .sensor(id: id, reading: reading)
        case "mqtt":
            guard let topic = value.nonEmptyString() else { return nil }
            guard references.mqttConfigured else {
                return value.fail("an MQTT source needs the mqtt section")
            }
            if topic.contains("+") || topic.contains("#") {
                return value.fail("\"\(topic)\" is a wildcard; a characteristic follows one topic")
            }
            return .mqtt(topic: topic)
        case "static": return encoding.flatMap { parseValue(value, encoding: $0) }.map(ValueSource.fixed)
        case "written": return encoding.flatMap { parseValue(value, encoding: $0) }.map { .written(initial: $0) }
        default: return nil
        }
    }

    /// A literal checked the way values from sensors and MQTT are: by encoding it.
    private func parseValue(_ node: ConfigNode, encoding: ValueEncoding) -> SensorValue? {
        let value: SensorValue?
        switch encoding.format {
        case .bool: value = node.bool().map(SensorValue.bool)
        case .utf8: value = node.string().map(SensorValue.text)
        case .bytes: value = node.hexBytes().map(SensorValue.bytes)
        default: value = node.number().map(SensorValue.number)
        }
        guard let value else { return nil }
        do {
            _ = try encoding.encode(value)
            return value
        } catch {
            return node.fail(error.description)
        }
    }

    private func parseDescriptor(_ node: ConfigNode) -> DescriptorConfig? {
        guard let m = node.mapping("services[].characteristics[].descriptors[]") else { return nil }
        let uuid = m.required("uuid")?.uuid()
        if uuid == BluetoothUUID(0x2902) {
            m["uuid"]?.report("the Client Characteristic Configuration (2902) is managed by gattway")
        }
        var value: [UInt8]?
        switch (m["value"], m["hex"]) {
        case (let text?, nil): value = text.string().map { Array($0.utf8) }
        case (nil, let hex?): value = hex.hexBytes()
        case (.some, .some): m.node.report("give value or hex, not both")
        case (nil, nil): m.node.report("missing required key \"value\" (or \"hex\")")
        }
        guard let uuid, let value, uuid != BluetoothUUID(0x2902) else { return nil }
        return DescriptorConfig(uuid: uuid, value: value)
    }

    private func parseNotify(
        _ m: ConfigMapping?, properties: CharacteristicProperties,
        encoding: ValueEncoding?, source: ValueSource?
    ) -> NotifyPolicy {
        let minInterval = m?["min_interval"]?.duration() ?? ConfigDefaults.notifyMinInterval
        let maxInterval = m?["max_interval"]?.duration(in: .milliseconds(1)...(.seconds(86_400)))
        var delta: NotifyPolicy.Delta?
        if let node = m?["delta"], let text = node.string() {
            if text.hasSuffix("%"), let value = Double(text.dropLast()), value > 0, value.isFinite {
                delta = .percent(value)
            } else if let value = Double(text), value > 0, value.isFinite {
                delta = .absolute(value)
            } else {
                node.report("\(node.shown) is not a positive number or percentage (as in 0.5 or 5%)")
            }
            if let encoding, !encoding.format.isNumeric {
                node.report("delta needs a numeric format (format is \(encoding.format.rawValue))")
            }
        }
        let onChange = m?["on_change"]?.bool() ?? source.map(ConfigDefaults.notifyOnChange(for:)) ?? D.notifyOnChange
        // Without a valid source the characteristic is refused anyway.
        let onSubscribe =
            m?["on_subscribe"]?.bool() ?? source.map(ConfigDefaults.notifyOnSubscribe(for:)) ?? false
        if let m {
            if !properties.isSubscribable {
                m.node.report("a notify policy needs the notify or indicate property")
            }
            if case .sensor(_, let reading) = source, reading.isEvent {
                // A heartbeat or a delta would send a press again, or drop one.
                for key in ["max_interval", "delta"] {
                    m[key]?.report("a \(reading.rawValue) reading is an event, sent once per event; it takes no \(key)")
                }
            }
            if let maxInterval, maxInterval < minInterval {
                m["max_interval"]?.report(
                    "\(DurationText.format(maxInterval)) is shorter than min_interval "
                        + "(\(DurationText.format(minInterval)))")
            }
        }
        return NotifyPolicy(
            minInterval: minInterval, maxInterval: maxInterval, delta: delta, onChange: onChange,
            currentValueOnSubscribe: onSubscribe)
    }

    private func checkSourceAgainstProperties(
        _ m: ConfigMapping, source: ValueSource?,
        properties: CharacteristicProperties
    ) {
        let place = m["properties"] ?? m["source"] ?? m.node
        switch source {
        case .fixed where properties.isWritable:
            place.report("a static value cannot be written; drop write/write_without_response or use source written")
        case .written where !properties.isWritable:
            place.report(
                "source is written by centrals, but the properties allow no write "
                    + "(add write or write_without_response)")
        default: break
        }
    }
}
