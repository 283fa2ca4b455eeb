import GPIO

/// A relay or LED: driven by writes (BLE or MQTT); `value` is the driven state.
final class OutputEngine: SensorEngine {
    private let line: any OutputLine

    init(_ settings: OutputSensorSettings, context: EngineContext) throws {
        line = try context.output(settings.line, initialValue: settings.initialValue)
    }

    var inputCount: Int { 0 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        preconditionFailure("an output has no inputs")
    }

    var deadline: UInt64? { nil }

    func start(at now: UInt64) throws -> [Emission] {
        [emission(try line.value(), now)]
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {}
    func tick(at now: UInt64) -> [Emission] { [] }

    func write(_ value: Bool, at now: UInt64) throws -> [Emission] {
        try line.set(value)
        return [emission(value, now)]
    }

    func stop() { line.release() }

    private func emission(_ value: Bool, _ time: UInt64) -> Emission {
        Emission(channel: Emission.valueChannel, reading: .bool(value), time: time)
    }
}
