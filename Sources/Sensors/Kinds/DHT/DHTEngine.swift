import GPIO

/// DHT22 / DHT11 on one line: drive it low as an output (the start signal), switch the same
/// request to an input with edge detection in one step (the sensor answers ~20 µs after the
/// line is let go; see `OutputLine.switchToInput` for libgpiod v1, where this is a release and a
/// new request), and decode the 40 bits from the edge timestamps. Reads at most once every 2 s.
final class DHTEngine: SensorEngine {
    private enum Phase {
        case idle(next: UInt64)
        case startSignal(until: UInt64, line: any OutputLine)
        case receiving(until: UInt64, line: any InputLine, edges: [EdgeEvent])
    }

    /// Long enough for the whole frame (about 5 ms) with margin.
    static let frameWindowNs: UInt64 = 12_000_000
    /// The kernel buffer must hold a whole frame (84 edges) even if gattway is slow to read.
    static let eventBufferSize = 256

    private let settings: DHTSettings
    private let context: EngineContext
    private var phase: Phase = .idle(next: 0)
    private var cycleStart: UInt64 = 0

    init(_ settings: DHTSettings, context: EngineContext) {
        self.settings = settings
        self.context = context
    }

    /// The line is an input only while the sensor's answer is received.
    var inputCount: Int {
        if case .receiving = phase { return 1 }
        return 0
    }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        guard case .receiving(_, let line, _) = phase else { preconditionFailure("no input while not receiving") }
        return try line.readEvents(into: &events)
    }

    var deadline: UInt64? {
        switch phase {
        case .idle(let next): next
        case .startSignal(let until, _): until
        case .receiving(let until, _, _): until
        }
    }

    var pollIntervalNs: UInt64? { Self.cycleNs(settings) }

    /// Time between reads: the configured interval, never less than the sensor's own 2 s.
    private static func cycleNs(_ settings: DHTSettings) -> UInt64 {
        max(settings.interval.nanoseconds, 2_000_000_000)
    }

    private var startSignalNs: UInt64 {
        settings.model == .dht22 ? 1_100_000 : 20_000_000
    }

    func start(at now: UInt64) throws -> [Emission] {
        phase = .idle(next: now)
        return []
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        guard case .receiving(let until, let line, var edges) = phase else { return }
        edges.append(event)
        phase = .receiving(until: until, line: line, edges: edges)
    }

    func tick(at now: UInt64) -> [Emission] {
        do {
            switch phase {
            case .idle:
                cycleStart = now
                let line = try context.output(settings.line, initialValue: false, inputBufferSize: Self.eventBufferSize)
                // Timed from when the line really went low: from the due time, a late tick
                // would let it go at once, too soon for the sensor to answer.
                phase = .startSignal(until: max(now, context.now()) + startSignalNs, line: line)
                return []
            case .startSignal(_, let output):
                let input = try context.switchToInput(output, bias: .pullUp, edges: .both)
                let released = max(now, context.now())
                phase = .receiving(until: released + Self.frameWindowNs, line: input, edges: [])
                return []
            case .receiving(_, let input, let edges):
                input.release()
                scheduleNext()
                return emissions(for: DHTFrame.decode(edges: edges, model: settings.model), at: now)
            }
        } catch {
            releaseLines()
            scheduleNext()
            return [Emission(channel: "temperature", reading: .failure(.gpio("\(error)")), time: now)]
        }
    }

    private func emissions(for result: Result<DHTFrame, SensorFailure>, at time: UInt64) -> [Emission] {
        switch result {
        case .success(let frame):
            return [
                Emission(channel: "temperature", reading: .number(frame.temperature), time: time),
                Emission(channel: "humidity", reading: .number(frame.humidity), time: time)
            ]
        case .failure(let failure):
            return [
                Emission(channel: "temperature", reading: .failure(failure), time: time),
                Emission(channel: "humidity", reading: .failure(failure), time: time)
            ]
        }
    }

    private func scheduleNext() {
        phase = .idle(next: cycleStart + Self.cycleNs(settings))
    }

    private func releaseLines() {
        switch phase {
        case .startSignal(_, let line): line.release()
        case .receiving(_, let line, _): line.release()
        case .idle: break
        }
    }

    func stop() {
        releaseLines()
        phase = .idle(next: .max)
    }
}

/// A decoded DHT frame.
public struct DHTFrame: Sendable, Equatable {
    public var bytes: [UInt8]
    public var humidity: Double
    public var temperature: Double

    /// Bits are the high times after the sensor's 80 µs response: about 27 µs for 0, 70 µs for
    /// 1. The last 40 high times are used, so a missed start of the answer does not matter.
    public static let oneThresholdNs: UInt64 = 48_000

    public static func decode(edges: [EdgeEvent], model: DHTSettings.Model) -> Result<DHTFrame, SensorFailure> {
        var highs: [UInt64] = []
        var rise: UInt64?
        for event in edges {
            if event.edge == .rising {
                rise = event.timestampNs
            } else if let r = rise {
                highs.append(event.timestampNs - r)
                rise = nil
            }
        }
        guard !edges.isEmpty else { return .failure(.timeout) }
        guard highs.count >= 40 else { return .failure(.incompleteFrame(bits: highs.count)) }
        var bytes = [UInt8](repeating: 0, count: 5)
        for (index, high) in highs.suffix(40).enumerated() where high > oneThresholdNs {
            bytes[index / 8] |= 0x80 >> UInt8(index % 8)
        }
        guard bytes[0..<4].reduce(UInt8(0), &+) == bytes[4] else {
            return .failure(.checksumMismatch(bytes: bytes))
        }
        switch model {
        case .dht22:
            let humidity = Double(UInt16(bytes[0]) << 8 | UInt16(bytes[1])) / 10
            let magnitude = Double(UInt16(bytes[2] & 0x7F) << 8 | UInt16(bytes[3])) / 10
            return .success(
                DHTFrame(
                    bytes: bytes, humidity: humidity,
                    temperature: bytes[2] & 0x80 != 0 ? -magnitude : magnitude))
        case .dht11:
            let humidity = Double(bytes[0]) + Double(bytes[1]) / 10
            let magnitude = Double(bytes[2]) + Double(bytes[3] & 0x7F) / 10
            return .success(
                DHTFrame(
                    bytes: bytes, humidity: humidity,
                    temperature: bytes[3] & 0x80 != 0 ? -magnitude : magnitude))
        }
    }
}
