import Config
import GPIO

/// Whether a configuration's sensor lines exist on a GPIO backend's chips now: `gattway check`
/// run on a Raspberry Pi says what `gattway run` would fail on, before it does.
public enum SensorLineCheck {
    /// One message per line that cannot be found (`sensor door: GPIO line GPIO71 not found; …`),
    /// and a single one for every line of a Raspberry Pi whose kernel shows no chip for the
    /// header, since the cause and the remedy are the same for all of them. Empty when every
    /// line is found.
    public static func problems(_ config: GatewayConfig, on backend: any GPIOBackend) -> [String] {
        let chips: [ChipInfo]
        do {
            chips = try backend.chips()
        } catch {
            return ["the sensors' GPIO lines could not be looked for: \(error)"]
        }
        var problems: [String] = []
        var headerless: [String] = []
        var missingHeader: (board: RaspberryPiBoard, chips: [String])?
        for sensor in config.sensors {
            for reference in sensor.kind.lines {
                let selector = LineSelector(
                    reference.name, chip: reference.chip.map { SensorMapping.chipName($0, gpio: config.gpio) })
                do {
                    _ = try LineResolver.resolve(selector, in: chips, board: backend.board)
                } catch GPIOError.headerChipMissing(_, let board, let chipNames) {
                    headerless.append("\(sensor.id) (\(reference))")
                    missingHeader = (board, chipNames)
                } catch {
                    problems.append("sensor \(sensor.id): \(error)")
                }
            }
        }
        if let missingHeader {
            problems.insert(
                "GPIO lines not found for \(headerless.joined(separator: ", ")): "
                    + missingHeader.board.missingHeaderChip(chips: missingHeader.chips), at: 0)
        }
        return problems
    }
}
