import GPIO

/// Button, door contact, PIR: reports the line's state, keeping an active state for `holdTime`
/// after it last became active; with `press` settings also each press (`PressDetector`) on the
/// `press` channel.
final class BinaryEngine: SensorEngine {
    private let input: any InputLine
    private let holdNs: UInt64
    private var reported = false
    private var lastActive: UInt64 = 0
    private var offDue: UInt64?
    private var presses: PressDetector?

    init(_ settings: BinarySettings, context: EngineContext) throws {
        input = try context.input(settings.line, bias: settings.bias, edges: .both)
        holdNs = settings.holdTime.nanoseconds
        presses = settings.press.map(PressDetector.init)
    }

    var inputCount: Int { 1 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        try input.readEvents(into: &events)
    }

    var deadline: UInt64? {
        guard let pressDue = presses?.deadline else { return offDue }
        return min(offDue ?? pressDue, pressDue)
    }

    func start(at now: UInt64) throws -> [Emission] {
        reported = try input.value()
        lastActive = now
        presses?.start(active: reported)
        return [emission(now)]
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        let time = event.timestampNs
        // The state's value comes before the press it completes.
        let press = presses?.change(active: event.edge.level, at: time)
        defer { if let press { emissions.append(Self.emission(press, at: time)) } }
        if event.edge.level {
            lastActive = time
            offDue = nil
            guard !reported else { return }
            reported = true
            emissions.append(emission(time))
            return
        }
        guard reported else { return }
        if time >= lastActive + holdNs {
            reported = false
            emissions.append(emission(time))
            return
        }
        offDue = lastActive + holdNs
    }

    func tick(at now: UInt64) -> [Emission] {
        var out: [Emission] = []
        if let press = presses?.tick(at: now) { out.append(Self.emission(press, at: now)) }
        if let due = offDue, due <= now {
            offDue = nil
            reported = false
            out.append(emission(now))
        }
        return out
    }

    func stop() { input.release() }

    private func emission(_ time: UInt64) -> Emission {
        Emission(channel: Emission.valueChannel, reading: .bool(reported), time: time)
    }

    private static func emission(_ press: PressEvent, at time: UInt64) -> Emission {
        Emission(channel: Emission.pressChannel, reading: .number(Double(press.rawValue)), time: time)
    }
}
