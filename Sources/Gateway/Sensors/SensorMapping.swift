import Config
import GPIO
import GPIOLibgpiod
import Sensors

/// Maps the configuration's GPIO and sensor sections onto the GPIO and Sensors layers' own
/// plain values. Pure: the only place where the two vocabularies meet.
///
/// The configuration names a simulated chip `gpiochipN` *and* gives it a label, while the
/// simulator knows chips by label only, so line references by chip name or `/dev` path are
/// rewritten to the label. What each kind's settings become is the kind's own business
/// (`SensorKindConfig.sensorSettings`, in each kind's folder under Sources/Sensors/Kinds/).
public enum SensorMapping {
    /// The simulator's chips for the configuration's `gpio.chips`.
    public static func simulatedChips(_ config: GPIOConfig) -> [SimulatedChipConfig] {
        config.simulatedChips.map { chip in
            SimulatedChipConfig(
                label: chip.label,
                lines: chip.lines.map { line in
                    SimulatedLineConfig(name: line.name, generator: line.generator)
                })
        }
    }

    /// The Sensors layer's spec for one configured sensor. `gpio` resolves chip names of
    /// simulated chips to their labels.
    public static func spec(_ sensor: SensorConfig, gpio: GPIOConfig, stateDirectory: String) -> SensorSpec {
        let (kind, lineFilters) = sensor.kind.sensorSettings(
            line: { LineSelector($0.name, chip: $0.chip.map { chipName($0, gpio: gpio) }) },
            stateDirectory: stateDirectory)
        return SensorSpec(name: sensor.id, kind: kind, filters: lineFilters + sensor.filters)
    }

    /// The simulator knows a chip by its label; the configuration may also name it `gpiochipN`
    /// or `/dev/gpiochipN`. Real chips keep the reference as written.
    static func chipName(_ chip: String, gpio: GPIOConfig) -> String {
        guard gpio.backend == .simulated,
            let match = gpio.simulatedChips.first(where: { [$0.label, $0.name, "/dev/\($0.name)"].contains(chip) })
        else { return chip }
        return match.label
    }
}

/// Which GPIO backend a configuration runs on.
public enum GPIOBackendSelection {
    /// libgpiod on the real chips, or the simulator on the configured chips. `clock` applies to
    /// the simulator: `.realTime` for the service, `.virtual` for tests.
    public static func make(_ config: GPIOConfig, clock: SimulatedBackend.Clock = .realTime) -> any GPIOBackend {
        switch config.backend {
        case .libgpiod: LibgpiodBackend()
        case .simulated: SimulatedBackend(chips: SensorMapping.simulatedChips(config), clock: clock)
        }
    }
}
