import ConfigReading
import GPIO
import Sensors

extension ConfigParser {
    // MARK: gpio

    func parseGPIO(_ m: ConfigMapping?) -> GPIOConfig {
        let backend = m?["backend"]?.choice(GPIOBackendKind.self) ?? D.gpioBackend
        var chips: [SimulatedGPIOChip] = []
        if let node = m?["chips"] {
            if backend == .simulated {
                chips = node.list()?.enumerated().compactMap { parseSimulatedChip($1, index: $0) } ?? []
            } else {
                node.report("chips are only configured for the simulated backend (backend is \(backend.rawValue))")
            }
        }
        return GPIOConfig(backend: backend, simulatedChips: chips)
    }

    private func parseSimulatedChip(_ node: ConfigNode, index: Int) -> SimulatedGPIOChip? {
        guard let m = node.mapping("gpio.chips[]") else { return nil }
        let name = m["name"]?.nonEmptyString() ?? "gpiochip\(index)"
        let label = m["label"]?.nonEmptyString() ?? "\(D.simulatedChipLabelPrefix)\(index)"
        let lineNodes = m.required("lines")?.list() ?? []
        var lines: [SimulatedGPIOLine] = []
        var linePaths: [ConfigPath] = []
        var seen: [String: Int] = [:]
        for lineNode in lineNodes {
            guard let line = lineNode.mapping("gpio.chips[].lines[]") else { continue }
            guard let lineName = line.required("name")?.nonEmptyString() else { continue }
            if let first = seen[lineName] {
                line["name"]?.report("duplicate line name \"\(lineName)\" (first at line \(first))")
            }
            seen[lineName] = line["name"]?.line ?? 0
            let generator = line["generator"]?.mapping("gpio.chips[].lines[].generator").flatMap(parseGenerator)
            lines.append(SimulatedGPIOLine(name: lineName, generator: generator))
            linePaths.append(lineNode.path)
        }
        // An HC-SR04 generator answers pulses on a trigger line of its own chip.
        for (path, line) in zip(linePaths, lines) {
            if case .hcsr04(let trigger, _) = line.generator, seen[trigger] == nil {
                context.error(
                    path.key("generator").key("trigger"), line: nil,
                    "no line \"\(trigger)\" on this chip"
                        + Suggestion.hint(for: trigger, among: lines.map(\.name)))
            }
        }
        return SimulatedGPIOChip(name: name, label: label, lines: lines)
    }

    private enum GeneratorKind: String, CaseIterable {
        case constant, square, pulses, steps, dht22, dht11, hcsr04, socket

        var settings: [String] {
            switch self {
            case .constant: ["level"]
            case .square: ["period", "duty"]
            case .pulses: ["rate", "width"]
            case .steps: ["steps", "repeat"]
            case .dht22, .dht11: ["temperature", "humidity", "silent_after", "silent_for"]
            case .hcsr04: ["distance", "trigger"]
            case .socket: ["path"]
            }
        }
    }

    private func parseGenerator(_ m: ConfigMapping) -> SignalGenerator? {
        guard let kind = m.required("type")?.choice(GeneratorKind.self) else { return nil }
        rejectSettings(of: m, allowed: ["type"] + kind.settings, listed: kind.settings, kindName: kind.rawValue)
        switch kind {
        case .constant:
            return .constant(m["level"].flatMap(lineLevel) ?? D.constantLevel)
        case .square:
            guard let period = m.required("period")?.duration(in: .microseconds(1)...(.seconds(3600))) else {
                return nil
            }
            return .square(period: period, duty: m["duty"]?.number(in: 0...1) ?? D.squareDuty)
        case .pulses:
            guard let rate = m.required("rate")?.number(in: 0.001...1_000_000) else { return nil }
            let period = Duration.nanoseconds(Int64(1e9 / rate))
            let width = m["width"]?.duration() ?? period / 2
            if width >= period {
                m["width"]?.report(
                    "\(DurationText.format(width)) is not shorter than the period "
                        + "of \(ConfigNode.formatNumber(rate)) Hz")
            }
            return .pulses(perSecond: rate, width: width)
        case .steps:
            let steps =
                m.required("steps")?.list()?.compactMap { item -> SignalGenerator.Step? in
                    guard let step = item.mapping("gpio.chips[].lines[].generator.steps[]"),
                        let level = step.required("level").flatMap(lineLevel),
                        let duration = step.required("duration")?.duration()
                    else { return nil }
                    return SignalGenerator.Step(level, duration)
                } ?? []
            if steps.isEmpty, let node = m["steps"], case .sequence = node.node.content {
                node.report("needs at least one step")
            }
            return .steps(steps, repeats: m["repeat"]?.bool() ?? D.stepsRepeat)
        case .dht22, .dht11:
            let temperature = m["temperature"]?.number(in: -40...80) ?? D.dhtTemperature
            let humidity = m["humidity"]?.number(in: 0...100) ?? D.dhtHumidity
            var silence: SignalGenerator.Silence?
            if let after = m["silent_after"]?.duration() {
                silence = SignalGenerator.Silence(after: after, duration: m["silent_for"]?.duration() ?? .seconds(1_000_000_000))
            } else if let node = m["silent_for"] {
                node.report("needs silent_after: when the sensor stops answering")
            }
            return kind == .dht22
                ? .dht22(humidity: humidity, temperature: temperature, silence: silence)
                : .dht11(humidity: humidity, temperature: temperature, silence: silence)
        case .hcsr04:
            guard let trigger = m.required("trigger")?.nonEmptyString() else { return nil }
            return .hcsr04(trigger: trigger, distanceMeters: m["distance"]?.number(in: 0.02...4) ?? D.hcsr04Distance)
        case .socket:
            guard let node = m.required("path"), let path = node.nonEmptyString() else { return nil }
            // sockaddr_un's sun_path holds 108 bytes with the terminating NUL.
            if path.utf8.count > 107 {
                node.report("\(path.utf8.count) bytes is longer than a Unix socket path may be (107)")
            }
            return .socket(path: path)
        }
    }

    private func lineLevel(_ node: ConfigNode) -> Bool? {
        guard let value = node.integer(in: 0...1) else { return nil }
        return value == 1
    }

    /// Reports keys that exist in the schema but do not belong to this kind; the message lists
    /// the kind's own settings (`listed`), not the keys every kind has.
    func rejectSettings(of m: ConfigMapping, allowed: [String], listed: [String], kindName: String) {
        for key in m.order where !allowed.contains(key) {
            m.node.context.error(
                m.path.key(key), line: m[key]?.line ?? m.node.line,
                "not a setting of \"\(kindName)\" (its settings: "
                    + "\(listed.joined(separator: ", ")))")
        }
    }

    // MARK: sensors

    /// The keys every sensor has, whatever its kind.
    static let commonSensorSettings = ["id", "kind", "chip", "filters", "bthome"]

    func parseSensor(_ node: ConfigNode, gpio: GPIOConfig, claims: inout LineClaims) -> SensorConfig? {
        guard let m = node.mapping("sensors[]") else { return nil }
        let id = m.required("id")?.nonEmptyString()
        guard let kindNode = m.required("kind"),
            let definition = kindNode.choice(among: SensorKinds.all.map(\.name)).flatMap(SensorKinds.named)
        else { return nil }
        rejectSettings(
            of: m, allowed: Self.commonSensorSettings + definition.settings, listed: definition.settings,
            kindName: definition.name)
        let reader = SensorSettingsReader(mapping: m)
        let kind = definition.parse(reader)
        let filters = m["filters"].map { parseFilters($0, kind: definition) } ?? []
        let bthome = m["bthome"]?.bool() ?? D.bthome
        if bthome, definition.value == .driven {
            m["bthome"]?.report("an output is not broadcast; bthome applies to sensors that measure")
        }
        if gpio.backend == .simulated {
            checkSimulated(reader.lines, in: m, chips: gpio.simulatedChips)
        }
        for (key, reference) in reader.lines {
            if let owner = claims.owners[reference] {
                m[key]?.report("line \(reference) is already used by sensor \"\(owner)\"")
            } else {
                claims.owners[reference] = id ?? ""
            }
        }
        guard let id, let kind else { return nil }
        return SensorConfig(id: id, kind: kind, filters: filters, bthome: bthome)
    }

    /// With the simulated backend the lines are known: each must exist on a configured chip.
    private func checkSimulated(
        _ lines: [(key: String, reference: LineReference)], in m: ConfigMapping,
        chips: [SimulatedGPIOChip]
    ) {
        var candidates = chips
        if let chip = m["chip"]?.string() {
            candidates = chips.filter { [$0.label, $0.name, "/dev/\($0.name)"].contains(chip) }
            if candidates.isEmpty {
                let names = chips.map(\.label)
                m["chip"]?.report("no simulated chip \"\(chip)\"\(Suggestion.hint(for: chip, among: names))")
                return
            }
        }
        let names = candidates.flatMap { $0.lines.map(\.name) }
        // Found as the simulator will find it: a chip labelled like a Raspberry Pi's pin
        // controller answers to `GPIO<n>` and `pin<k>` as the real one does.
        let listed = candidates.map(\.info)
        for (key, reference) in lines where (try? LineResolver.resolve(LineSelector(reference.name), in: listed)) == nil {
            m[key]?.report(
                "no line \"\(reference.name)\" on the simulated chips"
                    + Suggestion.hint(for: reference.name, among: names))
        }
    }

    private func parseFilters(_ node: ConfigNode, kind: SensorKindDescription) -> [SensorFilter] {
        if kind.value == .driven {
            node.report("an output has no filters")
            return []
        }
        return node.list()?.compactMap { item -> SensorFilter? in
            guard let m = item.mapping("sensors[].filters[]") else { return nil }
            guard m.order.count == 1, let key = m.order.first else {
                if m.order.count > 1 {
                    item.report(
                        "one filter per item (found \(m.order.joined(separator: ", "))); "
                            + "list them as separate items, in the order they apply")
                } else if case .mapping(let raw) = item.node.content, raw.isEmpty {
                    item.report("empty filter")
                }
                return nil
            }
            guard let value = m[key] else {
                item.report("filter \(key) needs a value")
                return nil
            }
            if ["invert", "delay_on", "delay_off"].contains(key), kind.value != .binary {
                value.report("\(key) applies to binary sensors only (this sensor is \(kind.name))")
                return nil
            }
            switch key {
            case "invert":
                guard let flag = value.bool() else { return nil }
                if !flag { value.report("write invert: true, or leave the filter out") }
                return flag ? .invert : nil
            case "delay_on": return value.duration().map(SensorFilter.delayedOn)
            case "delay_off": return value.duration().map(SensorFilter.delayedOff)
            case "moving_average": return value.integer(in: 2...1000).map(SensorFilter.movingAverage)
            case "offset": return value.number().map(SensorFilter.offset)
            case "scale": return value.number().map(SensorFilter.scale)
            default: return nil
            }
        } ?? []
    }
}
