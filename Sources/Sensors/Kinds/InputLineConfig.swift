import GPIO

/// A GPIO line found by name, optionally on a particular chip (label such as `pinctrl-bcm2711`,
/// name such as `gpiochip0`, or path such as `/dev/gpiochip0`).
public struct LineReference: Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var chip: String?

    public init(name: String, chip: String?) {
        self.name = name
        self.chip = chip
    }

    public var description: String { chip.map { "\($0)/\(name)" } ?? name }
}

/// How an input line is requested.
public struct InputLineConfig: Sendable, Hashable {
    public var line: LineReference
    public var bias: LineBias
    public var activeLow: Bool
    /// Debounce period; zero for none.
    public var debounce: Duration

    public init(line: LineReference, bias: LineBias, activeLow: Bool, debounce: Duration) {
        self.line = line
        self.bias = bias
        self.activeLow = activeLow
        self.debounce = debounce
    }
}

public enum LineBias: String, Sendable, Hashable, CaseIterable {
    case asIs = "as_is"
    case disabled
    case pullUp = "pull_up"
    case pullDown = "pull_down"
}

extension InputLineConfig {
    /// The defaults of the line settings every input kind has.
    public static let defaultBias = LineBias.asIs
    public static let defaultActiveLow = false
    public static let defaultDebounce = Duration.zero

    /// The line filters `active_low` and `debounce` stand for, in the Sensors layer's terms.
    var lineFilters: [SensorFilter] {
        (activeLow ? [.invert] : []) + (debounce > .zero ? [.debounce(debounce)] : [])
    }

    var gpioBias: GPIOBias {
        switch bias {
        case .asIs: .asIs
        case .disabled: .disabled
        case .pullUp: .pullUp
        case .pullDown: .pullDown
        }
    }
}
