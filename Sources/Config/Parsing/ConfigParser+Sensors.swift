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
            case .dht22, .dht11: ["temperature", "humidity"]
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
            return kind == .dht22
                ? .dht22(humidity: humidity, temperature: temperature)
                : .dht11(humidity: humidity, temperature: temperature)
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

    enum SensorKindName: String, CaseIterable {
        case binary, counter, rate
        case pulseWidth = "pulse_width"
        case distance, dht22, dht11
        case rotaryEncoder = "rotary_encoder"
        case output

        static let common = ["id", "kind", "chip", "filters", "bthome"]
        private static let input = ["line", "bias", "active_low", "debounce"]

        var settings: [String] {
            switch self {
            case .binary: Self.input + ["hold_time", "press"]
            case .counter: Self.input
            case .rate: Self.input + ["window", "per", "scale"]
            case .pulseWidth: Self.input + ["window"]
            case .distance: ["trigger", "echo", "bias", "interval", "timeout"]
            case .dht22, .dht11: ["line", "interval"]
            case .rotaryEncoder: ["a", "b", "bias", "active_low", "debounce", "transitions_per_step", "wrap"]
            case .output: ["line", "active_low", "initial"]
            }
        }
    }

    func parseSensor(_ node: ConfigNode, gpio: GPIOConfig, claims: inout LineClaims) -> SensorConfig? {
        guard let m = node.mapping("sensors[]") else { return nil }
        let id = m.required("id")?.nonEmptyString()
        guard let kindName = m.required("kind")?.choice(SensorKindName.self) else { return nil }
        rejectSettings(
            of: m, allowed: SensorKindName.common + kindName.settings, listed: kindName.settings,
            kindName: kindName.rawValue)
        let chip = m["chip"]?.nonEmptyString()

        var lines: [(key: String, reference: LineReference)] = []
        func line(_ key: String) -> LineReference? {
            guard let reference = m.required(key)?.nonEmptyString().map({ LineReference(name: $0, chip: chip) })
            else { return nil }
            lines.append((key, reference))
            return reference
        }
        func input(_ key: String) -> InputLineConfig? {
            guard let reference = line(key) else { return nil }
            return InputLineConfig(
                line: reference, bias: m["bias"]?.choice(LineBias.self) ?? D.bias,
                activeLow: m["active_low"]?.bool() ?? D.activeLow,
                debounce: m["debounce"]?.duration(in: .zero...(.seconds(10))) ?? D.debounce)
        }
        let window = { (fallback: Duration) in
            m["window"]?.duration(in: .milliseconds(10)...(.seconds(3600))) ?? fallback
        }

        let kind: SensorKindConfig?
        switch kindName {
        case .binary:
            let press = m["press"].flatMap { parsePress($0, debounce: m["debounce"]) }
            kind = input("line").map {
                .binary($0, holdTime: m["hold_time"]?.duration() ?? D.holdTime, press: press)
            }
        case .counter:
            kind = input("line").map { .counter($0) }
        case .rate:
            kind = input("line").map {
                .rate(
                    $0, window: window(D.rateWindow), per: m["per"]?.choice(RateSettings.Per.self) ?? D.ratePer,
                    scale: m["scale"]?.number() ?? D.rateScale)
            }
        case .pulseWidth:
            kind = input("line").map { .pulseWidth($0, window: window(D.pulseWidthWindow)) }
        case .distance:
            let trigger = line("trigger")
            let echo = input("echo")
            let interval = m["interval"]?.duration(in: .milliseconds(60)...(.seconds(3600))) ?? D.distanceInterval
            let timeout = m["timeout"]?.duration(in: .milliseconds(1)...(.seconds(1))) ?? D.distanceTimeout
            kind = trigger.flatMap { trigger in
                echo.map { .distance(trigger: trigger, echo: $0, interval: interval, timeout: timeout) }
            }
        case .dht22, .dht11:
            let model: DHTSettings.Model = kindName == .dht22 ? .dht22 : .dht11
            let interval = m["interval"]?.duration(in: D.dhtMinimumInterval...(.seconds(3600))) ?? D.dhtInterval
            kind = line("line").map { .dht(model, line: $0, interval: interval) }
        case .rotaryEncoder:
            let a = input("a"), b = input("b")
            var transitions = D.transitionsPerStep
            if let node = m["transitions_per_step"], let value = node.integer() {
                if [1, 2, 4].contains(value) { transitions = value } else { node.report("must be 1, 2 or 4") }
            }
            let wrap = m["wrap"]?.integer(in: 2...Int(Int32.max))
            kind = a.flatMap { a in
                b.map { .rotaryEncoder(a: a, b: $0, transitionsPerStep: transitions, wrap: wrap) }
            }
        case .output:
            kind = line("line").map {
                .output(
                    line: $0, activeLow: m["active_low"]?.bool() ?? D.activeLow,
                    initial: m["initial"]?.bool() ?? D.outputInitial)
            }
        }
        let filters = m["filters"].map { parseFilters($0, kind: kindName) } ?? []
        let bthome = m["bthome"]?.bool() ?? D.bthome
        if bthome, kindName == .output {
            m["bthome"]?.report("an output is not broadcast; bthome applies to sensors that measure")
        }
        if gpio.backend == .simulated {
            checkSimulated(lines, in: m, chips: gpio.simulatedChips)
        }
        for (key, reference) in lines {
            if let owner = claims.owners[reference] {
                m[key]?.report("line \(reference) is already used by sensor \"\(owner)\"")
            } else {
                claims.owners[reference] = id ?? ""
            }
        }
        guard let id, let kind else { return nil }
        return SensorConfig(id: id, kind: kind, filters: filters, bthome: bthome)
    }

    /// `press:` of a binary sensor: a long press must outlast the debounce, or no press could
    /// be shorter than a long one.
    private func parsePress(_ node: ConfigNode, debounce: ConfigNode?) -> PressSettings? {
        guard let m = node.mapping("sensors[].press") else { return nil }
        let window = m["double_press_window"]?.duration(in: .zero...(.seconds(2))) ?? D.pressDoublePressWindow
        let long = m["long_press_time"]?.duration(in: .milliseconds(100)...(.seconds(10))) ?? D.pressLongPressTime
        if let node = debounce, let debounce = DurationText.parse(node.node.scalar ?? ""), long <= debounce {
            (m["long_press_time"] ?? node).report(
                "long_press_time (\(DurationText.format(long))) must be longer than debounce "
                    + "(\(DurationText.format(debounce))): every press would be a long one")
        }
        return PressSettings(doublePressWindow: window, longPressTime: long)
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
        for (key, reference) in lines where !names.contains(reference.name) {
            m[key]?.report(
                "no line \"\(reference.name)\" on the simulated chips"
                    + Suggestion.hint(for: reference.name, among: names))
        }
    }

    private func parseFilters(_ node: ConfigNode, kind: SensorKindName) -> [SensorFilter] {
        if kind == .output {
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
            if ["invert", "delay_on", "delay_off"].contains(key), kind != .binary {
                value.report("\(key) applies to binary sensors only (this sensor is \(kind.rawValue))")
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
