import GPIO

/// Button, door contact, PIR: reports the line's state, keeping an active state for `holdTime`
/// after it last became active.
final class BinaryEngine: SensorEngine {
    private let input: any InputLine
    private let holdNs: UInt64
    private var reported = false
    private var lastActive: UInt64 = 0
    private var offDue: UInt64?

    init(_ settings: BinarySettings, context: EngineContext) throws {
        input = try context.input(settings.line, bias: settings.bias, edges: .both)
        holdNs = settings.holdTime.nanoseconds
    }

    var inputs: [any InputLine] { [input] }
    var deadline: UInt64? { offDue }

    func start(at now: UInt64) throws -> [Emission] {
        reported = try input.value()
        lastActive = now
        return [emission(now)]
    }

    func handle(_ event: EdgeEvent, input: Int) -> [Emission] {
        let time = event.timestampNs
        if event.edge.level {
            lastActive = time
            offDue = nil
            guard !reported else { return [] }
            reported = true
            return [emission(time)]
        }
        guard reported else { return [] }
        if time >= lastActive + holdNs {
            reported = false
            return [emission(time)]
        }
        offDue = lastActive + holdNs
        return []
    }

    func tick(at now: UInt64) -> [Emission] {
        offDue = nil
        reported = false
        return [emission(now)]
    }

    func stop() { input.release() }

    private func emission(_ time: UInt64) -> Emission {
        Emission(channel: Emission.valueChannel, reading: .bool(reported), unit: "", time: time)
    }
}
