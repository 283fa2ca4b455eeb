import GPIO

/// Pulses per second or minute over a sliding window, scaled (flow meters, anemometers, rain
/// gauges), reported every `reportInterval`.
final class RateEngine: SensorEngine {
    private let input: any InputLine
    private let settings: RateSettings
    private let windowNs: UInt64
    private let reportNs: UInt64
    private var meter: RateMeter
    private var reportDue: UInt64?

    init(_ settings: RateSettings, context: EngineContext) throws {
        self.settings = settings
        windowNs = settings.window.nanoseconds
        reportNs = settings.reportInterval.nanoseconds
        meter = RateMeter(windowNs: windowNs)
        input = try context.input(settings.line, bias: settings.bias, edges: .rising, bufferSize: 1024)
    }

    var inputCount: Int { 1 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        try input.readEvents(into: &events)
    }

    var deadline: UInt64? { reportDue }

    func start(at now: UInt64) throws -> [Emission] {
        reportDue = now + reportNs
        return []
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        meter.record(event.timestampNs)
    }

    func tick(at now: UInt64) -> [Emission] {
        reportDue = now + reportNs
        let perSecond = meter.rate(at: now)
        let value = perSecond * (settings.per == .minute ? 60 : 1) * settings.scale
        return [
            Emission(
                channel: Emission.valueChannel, reading: .number(value), time: now)
        ]
    }

    func stop() { input.release() }
}

/// Pulse rate from the pulse timestamps in a sliding window.
///
/// With two or more pulses in the window the rate is (pulses − 1) / (last − first): exact for a
/// steady signal whatever the window's phase, which a plain count / window is not at low rates.
/// When the signal stops, the count over the whole window takes over so the rate decays to 0.
struct RateMeter {
    let windowNs: UInt64
    private var times: [UInt64] = []
    private var head = 0

    init(windowNs: UInt64) { self.windowNs = windowNs }

    mutating func record(_ time: UInt64) {
        times.append(time)
    }

    mutating func rate(at now: UInt64) -> Double {
        let start = now > windowNs ? now - windowNs : 0
        while head < times.count, times[head] <= start { head += 1 }
        if head > 4096, head * 2 > times.count {
            times.removeFirst(head)
            head = 0
        }
        let inWindow = times[head...].prefix { $0 <= now }
        let count = inWindow.count
        let windowSeconds = Double(windowNs) / 1e9
        guard count >= 2, let first = inWindow.first, let last = inWindow.last else {
            return Double(count) / windowSeconds
        }
        let period = Double(last - first) / Double(count - 1)
        // A gap longer than two periods since the last pulse means the signal slowed or stopped.
        if Double(now - last) > 2 * period { return Double(count) / windowSeconds }
        return 1e9 / period
    }
}
