import GPIO

/// HC-SR04: a 10 µs pulse on the trigger output, then the echo input's high time is the sound's
/// round trip. No complete echo within `timeout` is reported as `.timeout`, not as a distance.
final class DistanceEngine: SensorEngine {
    private enum Phase {
        case idle(next: UInt64)
        case triggering(until: UInt64)
        case listening(until: UInt64, rise: UInt64?)
    }

    static let triggerPulseNs: UInt64 = 10_000

    private let trigger: any OutputLine
    private let echo: any InputLine
    private let settings: DistanceSettings
    private let context: EngineContext
    private var phase: Phase = .idle(next: 0)
    private var cycleStart: UInt64 = 0

    init(_ settings: DistanceSettings, context: EngineContext) throws {
        self.settings = settings
        self.context = context
        trigger = try context.output(settings.trigger, initialValue: false)
        echo = try context.input(settings.echo, bias: .asIs, edges: .both)
    }

    var inputCount: Int { 1 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        try echo.readEvents(into: &events)
    }

    var deadline: UInt64? {
        switch phase {
        case .idle(let next): next
        case .triggering(let until): until
        case .listening(let until, _): until
        }
    }

    var pollIntervalNs: UInt64? { settings.interval.nanoseconds }

    func start(at now: UInt64) throws -> [Emission] {
        phase = .idle(next: now)
        return []
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        guard case .listening(let until, let rise) = phase else { return }
        switch (event.edge, rise) {
        case (.rising, _):
            phase = .listening(until: until, rise: event.timestampNs)
        case (.falling, let rise?):
            let seconds = Double(event.timestampNs - rise) / 1e9
            finishCycle()
            emissions.append(
                Emission(
                    channel: Emission.valueChannel, reading: .number(seconds * settings.speedOfSound / 2), time: event.timestampNs))
        case (.falling, nil):
            break
        }
    }

    func tick(at now: UInt64) -> [Emission] {
        do {
            switch phase {
            case .idle:
                cycleStart = now
                try trigger.set(true)
                // Timed from the real rise (see `EngineContext.now`), so the pulse is never short.
                phase = .triggering(until: max(now, context.now()) + Self.triggerPulseNs)
                return []
            case .triggering:
                try trigger.set(false)
                phase = .listening(until: max(now, context.now()) + settings.timeout.nanoseconds, rise: nil)
                return []
            case .listening:
                finishCycle()
                return [Emission(channel: Emission.valueChannel, reading: .failure(.timeout), time: now)]
            }
        } catch {
            finishCycle()
            return [Emission(channel: Emission.valueChannel, reading: .failure(.gpio("\(error)")), time: now)]
        }
    }

    private func finishCycle() {
        phase = .idle(next: cycleStart + max(settings.interval.nanoseconds, 60_000_000))
    }

    func stop() {
        trigger.release()
        echo.release()
    }
}
