import ArgumentParser
import Config
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

/// The simulated chips of a configuration, with the lines its sensors claim.
struct SimulatedLineInventory: LineInventory {
    let config: GatewayConfig

    func chips() -> [ChipListing] {
        config.gpio.simulatedChips.map { chip in
            ChipListing(
                name: chip.name, label: chip.label,
                lines: chip.lines.enumerated().map { offset, line in
                    let user = user(of: line.name, on: chip)
                    return LineListing(
                        offset: offset, name: line.name, direction: user?.direction ?? .input,
                        consumer: user.map { "gattway (\($0.sensor))" },
                        note: line.generator.map(describe))
                })
        }
    }

    private func user(
        of lineName: String, on chip: SimulatedGPIOChip
    )
        -> (sensor: String, direction: LineListing.Direction)?
    {
        for sensor in config.sensors {
            for reference in sensor.kind.lines
            where reference.name == lineName
                && (reference.chip.map { [chip.name, chip.label, "/dev/\(chip.name)"].contains($0) } ?? true)
            {
                return (sensor.id, sensor.kind.outputLines.contains(reference) ? .output : .input)
            }
        }
        return nil
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
/// who holds each line, its direction, and active-low or bias where set.
struct BackendLineInventory: LineInventory {
    let backend: any GPIOBackend

    func chips() throws -> [ChipListing] {
        try backend.chips().map { chip in
            ChipListing(
                name: chip.name, label: chip.label,
                lines: chip.lines.map { line in
                    let notes = (line.activeLow ? ["active-low"] : []) + (line.bias == .asIs ? [] : [line.bias.rawValue])
                    return LineListing(
                        offset: line.offset, name: line.name.isEmpty ? "unnamed" : line.name,
                        direction: line.direction == .output ? .output : .input,
                        consumer: line.used ? line.consumer : nil,
                        note: notes.isEmpty ? nil : notes.joined(separator: ", "))
                })
        }
    }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
    func rightPadded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
