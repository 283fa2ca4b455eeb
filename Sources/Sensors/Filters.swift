import GPIO

/// The value filters of one channel, applied in configured order. Delayed on/off hold a value
/// back until a deadline, so the chain also has a deadline and a `tick`.
struct FilterChain {
    private enum Stage {
        case delayed(target: Bool, delayNs: UInt64, reported: Bool?, pending: UInt64?)
        case movingAverage(count: Int, window: [Double])
        case offset(Double)
        case scale(Double)
    }

    private var stages: [Stage]

    init(_ filters: [SensorFilter]) {
        stages = filters.compactMap {
            switch $0 {
            case .debounce, .invert: nil  // applied to the GPIO line, not to values
            case .delayedOn(let d): .delayed(target: true, delayNs: d.nanoseconds, reported: nil, pending: nil)
            case .delayedOff(let d): .delayed(target: false, delayNs: d.nanoseconds, reported: nil, pending: nil)
            case .movingAverage(let n): .movingAverage(count: max(1, n), window: [])
            case .offset(let x): .offset(x)
            case .scale(let x): .scale(x)
            }
        }
    }

    /// No stage changes or holds back a reading (no value filter is configured).
    var passesEverything: Bool { stages.isEmpty }

    /// Asked after every value, so it builds no array.
    var deadline: UInt64? {
        var earliest: UInt64?
        for case .delayed(_, _, _, let pending?) in stages { earliest = min(earliest ?? pending, pending) }
        return earliest
    }

    /// Passes a reading taken at `time` through every stage; nil when a stage holds it back.
    mutating func apply(_ reading: SensorSample.Reading, at time: UInt64) -> SensorSample.Reading? {
        apply(reading, at: time, from: 0)
    }

    /// Releases readings whose delay has expired by `time`, each through the remaining stages.
    mutating func tick(at time: UInt64) -> [SensorSample.Reading] {
        var released: [SensorSample.Reading] = []
        for index in stages.indices {
            guard case .delayed(let target, let delay, _, let pending?) = stages[index], pending <= time else { continue }
            stages[index] = .delayed(target: target, delayNs: delay, reported: target, pending: nil)
            if let out = apply(.bool(target), at: time, from: index + 1) { released.append(out) }
        }
        return released
    }

    private mutating func apply(_ reading: SensorSample.Reading, at time: UInt64, from start: Int) -> SensorSample.Reading? {
        var reading = reading
        for index in stages.indices where index >= start {
            switch (stages[index], reading) {
            case (.delayed(let target, let delay, let reported, let pending), .bool(let value)):
                if value == target, delay > 0, reported != target {
                    // Hold the change back; a contrary value before the deadline cancels it.
                    stages[index] = .delayed(
                        target: target, delayNs: delay, reported: reported,
                        pending: pending ?? time + delay)
                    return nil
                }
                let changed = reported != value
                stages[index] = .delayed(target: target, delayNs: delay, reported: value, pending: nil)
                if !changed { return nil }
            case (.movingAverage(let count, var window), .number(let value)):
                window.append(value)
                if window.count > count { window.removeFirst(window.count - count) }
                stages[index] = .movingAverage(count: count, window: window)
                reading = .number(window.reduce(0, +) / Double(window.count))
            case (.offset(let x), .number(let value)):
                reading = .number(value + x)
            case (.scale(let x), .number(let value)):
                reading = .number(value * x)
            default:
                break  // a filter that does not apply to this kind of reading passes it on
            }
        }
        return reading
    }
}

extension Array where Element == SensorFilter {
    /// The line-level part of the filters: debounce period and inversion (active-low).
    var lineDebounce: Duration {
        compactMap { if case .debounce(let d) = $0 { d } else { nil } }.last ?? .zero
    }

    var inverts: Bool {
        filter { $0 == .invert }.count % 2 == 1
    }
}
