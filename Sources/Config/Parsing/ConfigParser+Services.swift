import BluetoothCore

extension ConfigParser {
    func parseService(_ node: ConfigNode, references: References) -> ServiceConfig? {
        guard let m = node.mapping("services[]") else { return nil }
        let uuid = m.required("uuid")?.uuid()
        let name = m["name"]?.nonEmptyString()
        let primary = m["primary"]?.bool() ?? D.primary
        let includes = m["includes"]?.list()?.compactMap { item -> String? in
            guard let included = item.nonEmptyString() else { return nil }
            if included == name {
                item.report("a service cannot include itself")
            } else if !references.serviceNames.contains(included) {
                item.report("no service named \"\(included)\""
                            + Suggestion.hint(for: included, among: references.serviceNames))
            }
            return included
        } ?? []
        let characteristicNodes = m.required("characteristics")?.list() ?? []
        if characteristicNodes.isEmpty, let list = m["characteristics"], case .sequence = list.node {
            list.report("a service needs at least one characteristic")
        }
        var characteristics: [CharacteristicConfig] = []
        var firstLineOfName: [String: Int] = [:]
        for item in characteristicNodes {
            guard let characteristic = parseCharacteristic(item, references: references) else { continue }
            if let name = characteristic.name {
                let path = item.path.key("name")
                if let first = firstLineOfName[name] {
                    context.error(path, line: nil,
                                  "duplicate characteristic name \"\(name)\" in this service (first at line \(first))")
                }
                firstLineOfName[name] = firstLineOfName[name] ?? context.line(of: path) ?? 0
            }
            characteristics.append(characteristic)
        }
        guard let uuid else { return nil }
        return ServiceConfig(uuid: uuid, name: name, primary: primary, includes: includes,
                             characteristics: characteristics)
    }

    private func parseCharacteristic(_ node: ConfigNode, references: References) -> CharacteristicConfig? {
        guard let m = node.mapping("services[].characteristics[]") else { return nil }
        let uuid = m.required("uuid")?.uuid()
        let name = m["name"]?.nonEmptyString()
        let known = uuid.flatMap(SIGCharacteristic.named)
        let format = parseFormat(m, known: known)
        let unit = m["unit"].map(parseUnit) ?? known?.unit

        var source: ValueSource?
        if let s = m.required("source")?.mapping("services[].characteristics[].source") {
            source = parseSource(s, format: format, references: references)
        }
        var sensor: SensorConfig?
        if case .sensor(let id, _) = source { sensor = references.sensors[id] }
        let sensorIsOutput = sensor?.kind.isOutput ?? false
        let properties = m["properties"].map(parseProperties)
            ?? source.map { D.properties(for: $0, sensorIsOutput: sensorIsOutput) } ?? [.read]

        let permissions = parsePermissions(m["permissions"]?.mapping("services[].characteristics[].permissions"))
        if properties.isWritable, permissions.write.isOpen {
            (m["permissions"] ?? m.node).warn("writable by any central without pairing (permissions.write: open)")
        }
        let descriptors = m["descriptors"]?.list()?.compactMap(parseDescriptor) ?? []
        let notify = parseNotify(m["notify"]?.mapping("services[].characteristics[].notify"),
                                 properties: properties, format: format)
        checkSourceAgainstProperties(m, source: source, properties: properties)
        if let sensor, !sensor.kind.isOutput, properties.isWritable {
            (m["properties"] ?? m.node).report("sensor \"\(sensor.id)\" is an input (\(sensor.kind.name)); "
                                               + "only an output sensor can be written")
        }

        guard let uuid, let format, let source else { return nil }
        return CharacteristicConfig(uuid: uuid, name: name, properties: properties, permissions: permissions,
                                    format: format, unit: unit, source: source, descriptors: descriptors,
                                    notify: notify)
    }

    private enum FormatName: String, CaseIterable {
        case bool, uint8, uint16, uint24, uint32, sint8, sint16, sint32, float32, float64, sfloat, float
        case utf8, bytes
    }

    private func parseFormat(_ m: ConfigMapping, known: SIGCharacteristic?) -> CharacteristicFormat? {
        let exponent = m["exponent"]?.integer(Int8.self)
        let maxLength = m["max_length"]?.integer(in: 1...D.maxLength)
        var format: CharacteristicFormat
        if let node = m["format"] {
            guard let name = node.choice(FormatName.self) else { return nil }
            let e = exponent ?? D.exponent
            let length = maxLength ?? D.maxLength
            switch name {
            case .bool: format = .bool
            case .uint8: format = .unsigned(bits: 8, exponent: e)
            case .uint16: format = .unsigned(bits: 16, exponent: e)
            case .uint24: format = .unsigned(bits: 24, exponent: e)
            case .uint32: format = .unsigned(bits: 32, exponent: e)
            case .sint8: format = .signed(bits: 8, exponent: e)
            case .sint16: format = .signed(bits: 16, exponent: e)
            case .sint32: format = .signed(bits: 32, exponent: e)
            case .float32: format = .float32
            case .float64: format = .float64
            case .sfloat: format = .sfloat
            case .float: format = .float
            case .utf8: format = .utf8(maxLength: length)
            case .bytes: format = .bytes(maxLength: length)
            }
        } else if let known {
            format = known.format
            if let exponent {
                switch format {
                case .unsigned(let bits, _): format = .unsigned(bits: bits, exponent: exponent)
                case .signed(let bits, _): format = .signed(bits: bits, exponent: exponent)
                default: break
                }
            }
        } else {
            let names = SIGCharacteristic.known.map(\.uuid.description).joined(separator: ", ")
            m.node.report("missing required key \"format\" (it may be left out only for \(names))")
            return nil
        }
        switch format {
        case .unsigned, .signed: break
        default:
            m["exponent"]?.report("exponent applies to integer formats only (format is \(format.name))")
        }
        switch format {
        case .utf8, .bytes: break
        default:
            m["max_length"]?.report("max_length applies to utf8 and bytes only (format is \(format.name))")
        }
        return format
    }

    private func parseUnit(_ node: ConfigNode) -> UInt16? {
        guard let text = node.nonEmptyString() else { return nil }
        if let unit = GATTUnitName.unit(named: text) { return unit }
        if let uuid = BluetoothUUID(text), let short = uuid.uint16Value, (0x2700...0x27FF).contains(short) {
            return short
        }
        let hint = Suggestion.hint(for: text, among: GATTUnitName.all.map(\.name))
        node.report("\"\(text)\" is not a unit name or a unit UUID 0x2700-0x27FF\(hint)")
        return nil
    }

    private func parseProperties(_ node: ConfigNode) -> CharacteristicProperties {
        var properties: CharacteristicProperties = []
        let names = CharacteristicProperties.names.map(\.name)
        for item in node.list() ?? [] {
            guard let text = item.nonEmptyString() else { continue }
            guard let property = CharacteristicProperties.names.first(where: { $0.name == text })?.property else {
                item.report("\"\(text)\" is not a property\(Suggestion.hint(for: text, among: names)) "
                            + "(properties: \(names.joined(separator: ", ")))")
                continue
            }
            properties.insert(property)
        }
        if properties.isEmpty, case .sequence(let raw) = node.node, raw.count == 0 {
            node.report("a characteristic needs at least one property")
        }
        return properties
    }

    private enum RequirementName: String, CaseIterable {
        case encrypted, authenticated, bonded
    }

    private func parsePermissions(_ m: ConfigMapping?) -> AttributePermissions {
        func requirement(_ node: ConfigNode) -> SecurityRequirement? {
            if case .scalar(let scalar) = node.node {
                guard scalar.string == "open" else {
                    return node.fail("expected open or a list of encrypted, authenticated, bonded; got \(node.shown)")
                }
                return .open
            }
            guard let items = node.list() else { return nil }
            let names = Set(items.compactMap { $0.choice(RequirementName.self) })
            return SecurityRequirement(encrypted: names.contains(.encrypted),
                                       authenticated: names.contains(.authenticated),
                                       bonded: names.contains(.bonded))
        }
        return AttributePermissions(read: m?["read"].flatMap(requirement) ?? D.readPermission,
                                    write: m?["write"].flatMap(requirement) ?? D.writePermission)
    }

    private func parseSource(_ m: ConfigMapping, format: CharacteristicFormat?, references: References) -> ValueSource? {
        let kinds = m.order.filter { $0 != "reading" }
        if m.has("reading"), kinds != ["sensor"] {
            m["reading"]?.report("reading goes with sensor")
        }
        guard kinds.count == 1, let key = kinds.first else {
            if kinds.count > 1 {
                m.node.report("give exactly one source (found \(kinds.joined(separator: ", ")))")
            } else if case .mapping(let raw) = m.node.node, raw.count == 0 {
                m.node.report("give one of sensor, mqtt, static, written")
            }
            return nil
        }
        guard let value = m[key] else { return m.node.fail("\(key) needs a value") }
        switch key {
        case "sensor":
            guard let id = value.nonEmptyString() else { return nil }
            guard let sensor = references.sensors[id] else {
                if !references.declaredSensorIDs.contains(id) {
                    value.report("no sensor \"\(id)\""
                                 + Suggestion.hint(for: id, among: references.declaredSensorIDs.sorted()))
                }
                return nil
            }
            let readings = sensor.kind.readings
            guard let node = m["reading"] else { return .sensor(id: id, reading: readings[0]) }
            guard let reading = node.choice(SensorReading.self) else { return nil }
            guard readings.contains(reading) else {
                return node.fail("sensor \"\(id)\" (\(sensor.kind.name)) has no \(reading.rawValue) reading "
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
        case "static": return format.flatMap { parseValue(value, format: $0) }.map(ValueSource.fixed)
        case "written": return format.flatMap { parseValue(value, format: $0) }.map { .written(initial: $0) }
        default: return nil
        }
    }

    /// A literal checked against the characteristic's format.
    private func parseValue(_ node: ConfigNode, format: CharacteristicFormat) -> ConfigValue? {
        switch format {
        case .bool:
            return node.bool().map(ConfigValue.bool)
        case .unsigned(let bits, let exponent), .signed(let bits, let exponent):
            let signed: Bool = if case .signed = format { true } else { false }
            let low = signed ? -(Double(1 << (bits - 1))) : 0
            let high = signed ? Double(1 << (bits - 1)) - 1 : Double((1 << bits) - 1)
            guard let value = node.number() else { return nil }
            let raw = value / pow10(Int(exponent))
            guard raw >= low - 0.5, raw <= high + 0.5 else {
                return node.fail("\(ConfigNode.formatNumber(value)) does not fit \(format.name)"
                                 + (exponent == 0 ? "" : " with exponent \(exponent)"))
            }
            if exponent == 0 {
                guard value == value.rounded() else {
                    return node.fail("\(format.name) holds whole numbers; use exponent for decimals")
                }
                return .integer(Int64(value))
            }
            return .number(value)
        case .float32, .float64, .sfloat, .float:
            return node.number().map(ConfigValue.number)
        case .utf8(let maxLength):
            guard let text = node.string() else { return nil }
            guard text.utf8.count <= maxLength else {
                return node.fail("is \(text.utf8.count) bytes; max_length is \(maxLength)")
            }
            return .text(text)
        case .bytes(let maxLength):
            guard let bytes = node.hexBytes() else { return nil }
            guard bytes.count <= maxLength else {
                return node.fail("is \(bytes.count) bytes; max_length is \(maxLength)")
            }
            return .bytes(bytes)
        }
    }

    private func pow10(_ exponent: Int) -> Double {
        (0..<abs(exponent)).reduce(1.0) { value, _ in exponent < 0 ? value / 10 : value * 10 }
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

    private func parseNotify(_ m: ConfigMapping?, properties: CharacteristicProperties,
                             format: CharacteristicFormat?) -> NotifyPolicyConfig {
        let minInterval = m?["min_interval"]?.duration() ?? D.notifyMinInterval
        let maxInterval = m?["max_interval"]?.duration(in: .milliseconds(1)...(.seconds(86_400)))
        var delta: NotifyDelta?
        if let node = m?["delta"], let text = node.string() {
            if text.hasSuffix("%"), let value = Double(text.dropLast()), value > 0 {
                delta = .percent(value)
            } else if let value = Double(text), value > 0 {
                delta = .absolute(value)
            } else {
                node.report("\(node.shown) is not a positive number or percentage (as in 0.5 or 5%)")
            }
            if let format, !format.isNumeric {
                node.report("delta needs a numeric format (format is \(format.name))")
            }
        }
        let onChange = m?["on_change"]?.bool() ?? D.notifyOnChange
        if let m {
            if !properties.isSubscribable {
                m.node.report("a notify policy needs the notify or indicate property")
            }
            if let maxInterval, maxInterval < minInterval {
                m["max_interval"]?.report("\(DurationText.format(maxInterval)) is shorter than min_interval "
                                          + "(\(DurationText.format(minInterval)))")
            }
            if !onChange, maxInterval == nil {
                m["on_change"]?.report("with on_change false, set max_interval, or nothing is ever sent")
            }
        }
        return NotifyPolicyConfig(minInterval: minInterval, maxInterval: maxInterval, delta: delta,
                                  onChange: onChange)
    }

    private func checkSourceAgainstProperties(_ m: ConfigMapping, source: ValueSource?,
                                              properties: CharacteristicProperties) {
        let place = m["properties"] ?? m["source"] ?? m.node
        switch source {
        case .fixed where properties.isWritable:
            place.report("a static value cannot be written; drop write/write_without_response or use source written")
        case .written where !properties.isWritable:
            place.report("source is written by centrals, but the properties allow no write "
                         + "(add write or write_without_response)")
        default: break
        }
    }
}
