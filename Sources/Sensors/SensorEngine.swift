import GPIO

/// One reading an engine produced, before filtering and naming.
struct Emission {
    var channel: String
    var reading: SensorSample.Reading
    var unit: String
    var time: UInt64

    static let valueChannel = "value"
    static let lostEventsChannel = SensorSample.lostEventsChannel
    static let pressChannel = SensorSample.pressChannel
}

/// The kind-specific part of a sensor: owns its lines and turns edge events and time into
/// readings. Engines are synchronous and take time explicitly, so the same code runs in real
/// time (`SensorRunner`) and in virtual time (`SimulatedSensorDriver`), deterministically.
protocol SensorEngine: AnyObject {
    /// Inputs whose edge events this engine consumes now (may change between calls).
    var inputs: [any InputLine] { get }
    /// When `tick` must next be called; after `tick(at: t)` it is later than `t` or nil.
    var deadline: UInt64? { get }
    func start(at now: UInt64) throws -> [Emission]
    func handle(_ event: EdgeEvent, input: Int) -> [Emission]
    /// Events lost on an input; engines whose meaning survives it (counter) account for them.
    func lost(_ count: Int, input: Int)
    func tick(at now: UInt64) -> [Emission]
    /// Drives an output sensor; other kinds refuse writes.
    func write(_ value: Bool, at now: UInt64) throws -> [Emission]
    func stop()
}

extension SensorEngine {
    func lost(_ count: Int, input: Int) {}
    func write(_ value: Bool, at now: UInt64) throws -> [Emission] {
        throw SensorError.notWritable
    }
}

public enum SensorError: Error, Equatable, CustomStringConvertible {
    case notWritable
    case unknownSensor(String)
    case stateFile(path: String, message: String)

    public var description: String {
        switch self {
        case .notWritable: "only output sensors accept writes"
        case .unknownSensor(let name): "no sensor named \(name)"
        case let .stateFile(path, message): "sensor state file \(path): \(message)"
        }
    }
}

/// Everything an engine needs from its surroundings.
public struct EngineContext {
    let name: String
    let backend: any GPIOBackend
    let filters: [SensorFilter]
    let eventBufferSize: Int
    let onReadable: @Sendable () -> Void

    /// The consumer label other programs see on our lines (`gpioinfo`, EBUSY messages).
    var consumer: String { "gattway:\(name)" }

    /// The backend's clock now: when a line change an engine just made really happened, which on
    /// a loaded machine can be well after the tick that made it was due. Windows that wait for a
    /// sensor's answer start here, or a late tick would close them before the answer came.
    func now() -> UInt64 { backend.now() }

    func input(_ line: LineSelector, bias: GPIOBias, edges: EdgeDetection, bufferSize: Int = 0) throws -> any InputLine {
        try backend.requestInput(
            line, consumer: consumer,
            settings: InputSettings(
                bias: bias, activeLow: filters.inverts, edges: edges,
                debounce: filters.lineDebounce,
                eventBufferSize: max(bufferSize, eventBufferSize)),
            onReadable: onReadable)
    }

    /// - Parameter inputBufferSize: for an output that will be switched to an input
    ///   (`switchToInput`): the input's event buffer, as `bufferSize` of `input`.
    func output(_ line: LineSelector, initialValue: Bool, inputBufferSize: Int? = nil) throws -> any OutputLine {
        try backend.requestOutput(
            line, consumer: consumer,
            settings: OutputSettings(
                activeLow: filters.inverts, initialValue: initialValue,
                eventBufferSize: inputBufferSize.map { max($0, eventBufferSize) } ?? 0))
    }

    /// Turns `output` into an input in one step (see `OutputLine.switchToInput`), with the same
    /// debounce and readable callback as `input`.
    func switchToInput(_ output: any OutputLine, bias: GPIOBias, edges: EdgeDetection) throws -> any InputLine {
        try output.switchToInput(bias: bias, edges: edges, debounce: filters.lineDebounce, onReadable: onReadable)
    }
}

/// A sensor's engine plus its per-channel filters: the one place that orders edge events and
/// deadlines in time, so readings do not depend on when the process happened to wake up.
final class SensorCore {
    let spec: SensorSpec
    private let engine: any SensorEngine
    private var chains: [String: FilterChain] = [:]
    private var lostTotal = 0
    /// The edge events of one `step`, kept between steps so a step allocates no array for them.
    private var pendingEvents: [(event: EdgeEvent, input: Int)] = []

    init(spec: SensorSpec, backend: any GPIOBackend, onReadable: @escaping @Sendable () -> Void) throws {
        self.spec = spec
        let context = EngineContext(
            name: spec.name, backend: backend, filters: spec.filters,
            eventBufferSize: spec.eventBufferSize, onReadable: onReadable)
        engine = try spec.kind.makeEngine(context).engine
    }

    /// The earliest of the engine's and the filters' deadlines. Asked after every event, so it
    /// builds no arrays.
    var deadline: UInt64? {
        var earliest = engine.deadline
        for chain in chains.values {
            if let due = chain.deadline { earliest = min(earliest ?? due, due) }
        }
        return earliest
    }

    func start(at now: UInt64) throws -> [SensorSample] {
        finish(try engine.start(at: now))
    }

    /// Reads every pending event and runs every deadline up to `now`, in time order.
    func step(now: UInt64) -> [SensorSample] {
        var out: [Emission] = []
        var events = pendingEvents
        pendingEvents = []  // unique, so appending below reuses its storage
        events.removeAll(keepingCapacity: true)
        defer { pendingEvents = events }
        let inputs = engine.inputs
        for (index, line) in inputs.enumerated() {
            do {
                let batch = try line.readEvents()
                if batch.lost > 0 {
                    engine.lost(batch.lost, input: index)
                    lostTotal += batch.lost
                    out.append(
                        Emission(
                            channel: Emission.lostEventsChannel, reading: .number(Double(lostTotal)), unit: "",
                            time: batch.events.first?.timestampNs ?? now))
                }
                for event in batch.events { events.append((event, index)) }
            } catch {
                out.append(
                    Emission(
                        channel: Emission.valueChannel, reading: .failure(.gpio("\(error)")),
                        unit: "", time: now))
            }
        }
        if inputs.count > 1 {
            events.sort { $0.event.timestampNs < $1.event.timestampNs }  // stable: keeps per-line order
        }
        var next = 0
        var values: [SensorSample] = []
        finish(out, into: &values)
        while true {
            if let due = deadline, due <= now, next == events.count || events[next].event.timestampNs > due {
                if engine.deadline.map({ $0 <= due }) == true { finish(engine.tick(at: due), into: &values) }
                values += tickFilters(at: due)
            } else if next < events.count {
                finish(engine.handle(events[next].event, input: events[next].input), into: &values)
                next += 1
            } else {
                return values
            }
        }
    }

    func write(_ value: Bool, at now: UInt64) throws -> [SensorSample] {
        finish(try engine.write(value, at: now))
    }

    func stop() { engine.stop() }

    private func tickFilters(at time: UInt64) -> [SensorSample] {
        var values: [SensorSample] = []
        for channel in chains.keys.sorted() {
            for reading in chains[channel]!.tick(at: time) {
                values.append(value(channel: channel, reading: reading, unit: units[channel] ?? "", time: time))
            }
        }
        return values
    }

    private var units: [String: String] = [:]

    private func finish(_ emissions: [Emission]) -> [SensorSample] {
        var values: [SensorSample] = []
        finish(emissions, into: &values)
        return values
    }

    /// Filters the emissions into values appended to `values` (no array of their own per event).
    private func finish(_ emissions: [Emission], into values: inout [SensorSample]) {
        for emission in emissions {
            let unit = emission.channel == Emission.valueChannel ? (spec.unit ?? emission.unit) : emission.unit
            // Lost-event totals and press events are counts and codes: no filter applies to them.
            guard emission.channel != Emission.lostEventsChannel, emission.channel != Emission.pressChannel else {
                values.append(value(channel: emission.channel, reading: emission.reading, unit: unit, time: emission.time))
                continue
            }
            units[emission.channel] = unit
            if chains[emission.channel] == nil { chains[emission.channel] = FilterChain(spec.filters) }
            // In place: a chain copied out and back would copy its state for every value.
            if let filtered = chains[emission.channel]!.apply(emission.reading, at: emission.time) {
                values.append(value(channel: emission.channel, reading: filtered, unit: unit, time: emission.time))
            }
        }
    }

    private func value(channel: String, reading: SensorSample.Reading, unit: String, time: UInt64) -> SensorSample {
        SensorSample(sensor: spec.name, channel: channel, reading: reading, unit: unit, timestampNs: time)
    }
}
