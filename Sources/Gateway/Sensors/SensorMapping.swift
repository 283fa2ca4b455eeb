import Config
import GPIO
import GPIOLibgpiod
import Sensors

/// Maps the configuration's GPIO and sensor sections onto the GPIO and Sensors layers' own
/// plain values. Pure: the only place where the two vocabularies meet.
///
/// The naming differences it bridges: the configuration names a simulated chip `gpiochipN` *and*
/// gives it a label, while the simulator knows chips by label only, so line references by chip
/// name or `/dev` path are rewritten to the label; `active_low` and `debounce` on an input are the
/// Sensors layer's `invert` and `debounce` filters (which act on the line); a rotary encoder's
/// `wrap: N` is the range `0...N-1`; `pulse_width.window` is the report interval.
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
        func selector(_ reference: LineReference) -> LineSelector {
            LineSelector(reference.name, chip: reference.chip.map { chipName($0, gpio: gpio) })
        }
        /// The line-acting filters an input's settings stand for.
        func lineFilters(_ input: InputLineConfig) -> [SensorFilter] {
            (input.activeLow ? [.invert] : []) + (input.debounce > .zero ? [.debounce(input.debounce)] : [])
        }
        let valueFilters = sensor.filters
        let kind: SensorKind
        var filters: [SensorFilter] = []
        switch sensor.kind {
        case .binary(let input, let holdTime, let press):
            kind = .binary(
                BinarySettings(line: selector(input.line), bias: bias(input.bias), holdTime: holdTime, press: press))
            filters = lineFilters(input)
        case .counter(let input):
            kind = .counter(
                CounterSettings(
                    line: selector(input.line), bias: bias(input.bias),
                    stateDirectory: stateDirectory))
            filters = lineFilters(input)
        case .rate(let input, let window, let per, let scale):
            kind = .rate(
                RateSettings(
                    line: selector(input.line), bias: bias(input.bias),
                    per: per, window: window, scale: scale))
            filters = lineFilters(input)
        case .pulseWidth(let input, let window):
            kind = .pulseWidth(
                PulseWidthSettings(
                    line: selector(input.line), bias: bias(input.bias),
                    reportInterval: window))
            filters = lineFilters(input)
        case .distance(let trigger, let echo, let interval, let timeout):
            kind = .distance(
                DistanceSettings(
                    trigger: selector(trigger), echo: selector(echo.line),
                    interval: interval, timeout: timeout))
            filters = lineFilters(echo)
        case .dht(let model, let line, let interval):
            kind = .dht(
                DHTSettings(
                    model: model, line: selector(line),
                    interval: interval))
        case .rotaryEncoder(let a, let b, let transitionsPerStep, let wrap):
            kind = .rotaryEncoder(
                RotaryEncoderSettings(
                    a: selector(a.line), b: selector(b.line), bias: bias(a.bias),
                    transitionsPerStep: transitionsPerStep, wrap: wrap.map { 0...($0 - 1) }))
            filters = lineFilters(a)
        case .output(let line, let activeLow, let initial):
            kind = .output(OutputSensorSettings(line: selector(line), initialValue: initial))
            filters = activeLow ? [.invert] : []
        }
        return SensorSpec(name: sensor.id, kind: kind, filters: filters + valueFilters)
    }

    /// The simulator knows a chip by its label; the configuration may also name it `gpiochipN`
    /// or `/dev/gpiochipN`. Real chips keep the reference as written.
    static func chipName(_ chip: String, gpio: GPIOConfig) -> String {
        guard gpio.backend == .simulated,
            let match = gpio.simulatedChips.first(where: { [$0.label, $0.name, "/dev/\($0.name)"].contains(chip) })
        else { return chip }
        return match.label
    }

    static func bias(_ bias: LineBias) -> GPIOBias {
        switch bias {
        case .asIs: .asIs
        case .disabled: .disabled
        case .pullUp: .pullUp
        case .pullDown: .pullDown
        }
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
