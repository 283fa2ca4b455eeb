import GPIO

/// High time (s) and duty cycle (%) of a pulse train, averaged over the cycles completed in each
/// report interval. Without any edge in an interval the duty cycle is 0 or 100 % by the level.
final class PulseWidthEngine: SensorEngine {
    private let input: any InputLine
    private let reportNs: UInt64
    private var reportDue: UInt64?
    private var level = false
    private var lastRise: UInt64?
    private var highOfCycle: UInt64?
    private var sumHigh: UInt64 = 0
    private var sumPeriod: UInt64 = 0
    private var cycles = 0
    private var edgesInInterval = 0

    init(_ settings: PulseWidthSettings, context: EngineContext) throws {
        input = try context.input(settings.line, bias: settings.bias, edges: .both, bufferSize: 1024)
        reportNs = settings.reportInterval.nanoseconds
    }

    var inputCount: Int { 1 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        try input.readEvents(into: &events)
    }

    var deadline: UInt64? { reportDue }

    func start(at now: UInt64) throws -> [Emission] {
        level = try input.value()
        reportDue = now + reportNs
        return []
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        let t = event.timestampNs
        edgesInInterval += 1
        level = event.edge.level
        if event.edge == .rising {
            if let rise = lastRise, let high = highOfCycle {
                sumHigh += high
                sumPeriod += t - rise
                cycles += 1
            }
            lastRise = t
            highOfCycle = nil
        } else if let rise = lastRise {
            highOfCycle = t - rise
        }
    }

    func tick(at now: UInt64) -> [Emission] {
        reportDue = now + reportNs
        defer {
            sumHigh = 0
            sumPeriod = 0
            cycles = 0
            edgesInInterval = 0
        }
        let high: Double
        let duty: Double
        if cycles > 0 {
            high = Double(sumHigh) / Double(cycles) / 1e9
            duty = Double(sumHigh) / Double(sumPeriod) * 100
        } else if edgesInInterval == 0 {
            high = 0
            duty = level ? 100 : 0
        } else {
            return []  // edges but no complete cycle yet
        }
        return [
            Emission(channel: "high_time", reading: .number(high), time: now),
            Emission(channel: "duty_cycle", reading: .number(duty), time: now)
        ]
    }

    func stop() { input.release() }
}
