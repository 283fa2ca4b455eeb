import ArgumentParser
import Config
import ConfigReading
import GPIO

/// A source of GPIO chip listings for `gattway lines`.
protocol LineInventory {
    func chips() throws -> [ChipListing]
}

struct ChipListing: Equatable {
    var name: String
    var label: String
    var lines: [LineListing]

    /// `gpiochip0 [pinctrl-bcm2711] 58 lines`, then one indented row per line.
    func rendered() -> String {
        var rows = ["\(name) [\(label)] \(lines.count) line\(lines.count == 1 ? "" : "s")"]
        let nameWidth = lines.map { $0.name.count }.max() ?? 0
        for line in lines {
            var row =
                "  \(String(line.offset).leftPadded(to: 3))  \(line.name.rightPadded(to: nameWidth))"
                + "  \(line.direction.rawValue.rightPadded(to: 6))"
            if let consumer = line.consumer { row += "  used by \"\(consumer)\"" }
            if let note = line.note { row += "  \(note)" }
            rows.append(row)
        }
        return rows.joined(separator: "\n")
    }
}

struct LineListing: Equatable {
    enum Direction: String {
        case input
        case output
    }

    var offset: Int
    var name: String
    var direction: Direction
    var consumer: String?
    /// Extra detail, e.g. the generator of a simulated line.
    var note: String?
}

/// The simulated chips of a configuration, with the lines its sensors claim, found as the
/// simulator finds them.
struct SimulatedLineInventory: LineInventory {
    let config: GatewayConfig

    func chips() -> [ChipListing] {
        let listed = config.gpio.simulatedChips.map(\.info)
        let users = users(among: listed)
        return zip(config.gpio.simulatedChips, listed).map { chip, info in
            ChipListing(
                name: chip.name, label: chip.label,
                lines: zip(chip.lines, info.lines).map { line, lineInfo in
                    let user = users[LineAddress(chip: info.path, offset: lineInfo.offset)]
                    let naming = ListedName(lineInfo, on: info, among: listed)
                    let notes = (line.generator.map { [describe($0)] } ?? []) + naming.notes
                    return LineListing(
                        offset: lineInfo.offset, name: naming.name, direction: user?.direction ?? .input,
                        consumer: user.map { "gattway (\($0.sensor))" },
                        note: notes.isEmpty ? nil : notes.joined(separator: ", "))
                })
        }
    }

    private struct LineAddress: Hashable {
        let chip: String
        let offset: Int
    }

    /// The sensor holding each line, and whether it drives it.
    private func users(among chips: [ChipInfo]) -> [LineAddress: (sensor: String, direction: LineListing.Direction)] {
        var users: [LineAddress: (sensor: String, direction: LineListing.Direction)] = [:]
        for sensor in config.sensors {
            for reference in sensor.kind.lines {
                guard let line = try? LineResolver.resolve(LineSelector(reference.name, chip: reference.chip), in: chips)
                else { continue }
                let address = LineAddress(chip: line.chip.path, offset: line.offset)
                if users[address] == nil {
                    users[address] = (sensor.id, sensor.kind.outputLines.contains(reference) ? .output : .input)
                }
            }
        }
        return users
    }

    private func describe(_ generator: SignalGenerator) -> String {
        switch generator {
        case .constant(let level): "constant \(level ? 1 : 0)"
        case .square(let period, let duty): "square period \(DurationText.format(period)) duty \(duty)"
        case .pulses(let rate, let width): "pulses \(rate) Hz width \(DurationText.format(width))"
        case .steps(let steps, let repeats): "steps ×\(steps.count)\(repeats ? " repeating" : "")"
        case .dht22(let humidity, let temperature, _, _): "dht22 \(temperature) °C \(humidity) %"
        case .dht11(let humidity, let temperature, _, _): "dht11 \(temperature) °C \(humidity) %"
        case .hcsr04(let trigger, let distance): "hcsr04 \(distance) m (trigger \(trigger))"
        case .socket(let path): "levels sent to \(path)"
        }
    }
}

/// The chips a GPIO backend reports (libgpiod: the kernel's chips under /dev), as they are now:
/// who holds each line, its direction, and active-low or bias where set, named as `ListedName`
/// says.
struct BackendLineInventory: LineInventory {
    let backend: any GPIOBackend

    func chips() throws -> [ChipListing] {
        let chips = try backend.chips()
        return chips.map { chip in
            ChipListing(
                name: chip.name, label: chip.label,
                lines: chip.lines.map { line in
                    let naming = ListedName(line, on: chip, among: chips)
                    let notes =
                        (line.activeLow ? ["active-low"] : []) + (line.bias == .asIs ? [] : [line.bias.rawValue])
                        + naming.notes
                    return LineListing(
                        offset: line.offset, name: naming.name,
                        direction: line.direction == .output ? .output : .input,
                        consumer: line.used ? line.consumer : nil,
                        note: notes.isEmpty ? nil : notes.joined(separator: ", "))
                })
        }
    }
}

/// How `gattway lines` names a line: a line of a Raspberry Pi's pin controller that the kernel
/// does not call `GPIO<n>` by that name with the kernel's beside it (`GPIO4 (named GPIO_GCLK by
/// this kernel)`), since `GPIO4` finds it; and a header line's pin (`header pin 7`), since `pin7`
/// finds it too.
struct ListedName {
    var name: String
    var notes: [String]

    init(_ line: LineInfo, on chip: ChipInfo, among chips: [ChipInfo]) {
        let aliases = LineResolver.aliases(ofLine: line.offset, on: chip, among: chips)
        let kernelName = line.name.isEmpty ? "unnamed" : line.name
        name =
            aliases.first { $0.hasPrefix("GPIO") }.map { alias in
                line.name.isEmpty ? "\(alias) (unnamed by this kernel)" : "\(alias) (named \(line.name) by this kernel)"
            } ?? kernelName
        notes = aliases.filter { $0.hasPrefix("pin") }.map { "header pin \($0.dropFirst(3))" }
    }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
    func rightPadded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
