import GPIO

/// A quadrature rotary encoder on lines A and B. Every valid Gray-code transition moves a
/// quarter step forwards or backwards, so contact bounce (a phase flickering back and forth)
/// cancels itself out; a step is reported once `transitionsPerStep` net transitions add up.
final class RotaryEncoderEngine: SensorEngine {
    private let lineA: any InputLine
    private let lineB: any InputLine
    private var decoder: QuadratureDecoder

    init(_ settings: RotaryEncoderSettings, context: EngineContext) throws {
        lineA = try context.input(settings.a, bias: settings.bias, edges: .both, bufferSize: 256)
        lineB = try context.input(settings.b, bias: settings.bias, edges: .both, bufferSize: 256)
        decoder = QuadratureDecoder(transitionsPerStep: settings.transitionsPerStep, wrap: settings.wrap)
    }

    var inputCount: Int { 2 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        try (index == 0 ? lineA : lineB).readEvents(into: &events)
    }

    var deadline: UInt64? { nil }

    func start(at now: UInt64) throws -> [Emission] {
        decoder.reset(a: try lineA.value(), b: try lineB.value())
        return [emission(now)]
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        if decoder.update(line: input, level: event.edge.level) { emissions.append(emission(event.timestampNs)) }
    }

    func tick(at now: UInt64) -> [Emission] { [] }

    func stop() {
        lineA.release()
        lineB.release()
    }

    private func emission(_ time: UInt64) -> Emission {
        Emission(channel: Emission.valueChannel, reading: .number(Double(decoder.position)), time: time)
    }
}

/// The quadrature state machine.
struct QuadratureDecoder {
    let transitionsPerStep: Int
    let wrap: ClosedRange<Int>?
    private(set) var position = 0
    private var state = 0  // a << 1 | b
    private var accumulated = 0

    init(transitionsPerStep: Int, wrap: ClosedRange<Int>?) {
        self.transitionsPerStep = max(1, transitionsPerStep)
        self.wrap = wrap
    }

    /// Forward order of the states: A leads B.
    private static let order = [0b00: 0, 0b10: 1, 0b11: 2, 0b01: 3]

    mutating func reset(a: Bool, b: Bool) {
        state = (a ? 2 : 0) | (b ? 1 : 0)
        accumulated = 0
    }

    /// Applies a new level of line 0 (A) or 1 (B); returns whether the position changed.
    mutating func update(line: Int, level: Bool) -> Bool {
        let bit = line == 0 ? 2 : 1
        let next = level ? state | bit : state & ~bit
        guard next != state else { return false }
        let delta = (Self.order[next]! - Self.order[state]! + 4) % 4
        state = next
        switch delta {
        case 1: accumulated += 1
        case 3: accumulated -= 1
        default: return false  // both phases changed at once: direction unknown, ignore
        }
        guard abs(accumulated) >= transitionsPerStep else { return false }
        position += accumulated > 0 ? 1 : -1
        accumulated = 0
        if let wrap, !wrap.contains(position) {
            let span = wrap.upperBound - wrap.lowerBound + 1
            position = wrap.lowerBound + ((position - wrap.lowerBound) % span + span) % span
        }
        return true
    }
}
