import EventLoop
import GPIO
import StateFile

/// One reading an engine produced, before filtering and naming.
struct Emission {
    let channel: String
    let role: ChannelRole
    var reading: SensorSample.Reading
    var time: UInt64

    init(channel: String, reading: SensorSample.Reading, time: UInt64) {
        self.channel = channel
        role = ChannelRole(channel)
        self.reading = reading
        self.time = time
    }

    static let valueChannel = SensorSample.valueChannel
    static let lostEventsChannel = SensorSample.lostEventsChannel
    static let pressChannel = SensorSample.pressChannel
    static let availabilityChannel = SensorSample.availabilityChannel
}

/// The kind-specific part of a sensor: owns its lines and turns edge events and time into
/// readings. Engines are synchronous and take time explicitly, so the same code runs in real
/// time (`SensorRunner`) and in virtual time (`SimulatedSensorDriver`), deterministically.
protocol SensorEngine: AnyObject {
    /// How many inputs' edge events this engine consumes now (may change between calls).
    var inputCount: Int { get }
    /// Reads the pending edge events of input `index` (below `inputCount`) into `events`;
    /// returns how many were lost. The engine reads its own line: a step asking for an array of
    /// lines retained the array and each line in it (docs/performance.md).
    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int
    /// When `tick` must next be called; after `tick(at: t)` it is later than `t` or nil.
    var deadline: UInt64? { get }
    /// How often a polled sensor reads (its `SensorHealth` deadline follows from it); nil for a
    /// sensor driven by edges, whose silence says nothing.
    var pollIntervalNs: UInt64? { get }
    func start(at now: UInt64) throws -> [Emission]
    /// Appends the readings `event` produces to `emissions` (an array the caller reuses from one
    /// event to the next, so an edge allocates none).
    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission])
    /// Events lost on an input; engines whose meaning survives it (counter) account for them.
    func lost(_ count: Int, input: Int)
    func tick(at now: UInt64) -> [Emission]
    /// Drives an output sensor; other kinds refuse writes.
    func write(_ value: Bool, at now: UInt64) throws -> [Emission]
    /// Hands what the engine keeps across restarts (a counter's total) to the state files'
    /// writer, before it stops; the caller waits for the writer, then asks `persisted`.
    func persist(at now: UInt64)
    /// How the saves handed over ended: the saved total, or a failure reading, so the loss is
    /// reported, not silent; none when there was nothing to save.
    func persisted() -> [Emission]
    /// Releases the engine's lines.
    func stop()
}

extension SensorEngine {
    var pollIntervalNs: UInt64? { nil }
    func lost(_ count: Int, input: Int) {}
    func persist(at now: UInt64) {}
    func persisted() -> [Emission] { [] }
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
        case .stateFile(let path, let message): "sensor state file \(path): \(message)"
        }
    }
}

/// Everything an engine needs from its surroundings.
public struct EngineContext {
    let name: String
    let backend: any GPIOBackend
    let filters: [SensorFilter]
    let eventBufferSize: Int
    /// Writes the engine's state files (a counter's total).
    let stateWriter: StateFileWriter
    /// Steps the sensor soon, on the loop: a line's readable callback, and how a save the writer
    /// finished gets reported.
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
    /// The filtered channels, in name order (the order their held values are released in): an
    /// array searched by name, not a dictionary keyed by it, since a sensor has one to three
    /// channels and every value would otherwise hash its channel's name, twice.
    private var channels: [FilteredChannel] = []
    /// The sensor has value filters: without any (the common case), a reading goes out as it
    /// is, with no channel looked up and no chain applied (about 80 instructions per value).
    private let filtersValues: Bool
    private var lostTotal = 0
    /// Whether the readings are current; made when the sensor starts.
    private var health: SensorHealth?
    // Kept between steps, so a step allocates no array for the edge events it reads and orders
    // or for the readings each produces.
    /// Every input's events of a step, read one input after another.
    private var lineEvents: [EdgeEvent] = []
    /// With several inputs: `lineEvents` with their inputs, in time order. A sensor with one
    /// input (nearly every kind) takes its events from `lineEvents` as they were read.
    private var mergedEvents: [(event: EdgeEvent, input: Int)] = []
    private var eventEmissions: [Emission] = []

    /// One channel's filters.
    private struct FilteredChannel {
        let name: String
        var chain: FilterChain
    }

    init(
        spec: SensorSpec, backend: any GPIOBackend, stateWriter: StateFileWriter,
        onReadable: @escaping @Sendable () -> Void
    ) throws {
        self.spec = spec
        filtersValues = !FilterChain(spec.filters).passesEverything
        let context = EngineContext(
            name: spec.name, backend: backend, filters: spec.filters,
            eventBufferSize: spec.eventBufferSize, stateWriter: stateWriter, onReadable: onReadable)
        engine = try spec.kind.makeEngine(context).engine
    }

    /// The earliest of the engine's and the filters' deadlines. Asked after every event, so it
    /// builds no arrays.
    var deadline: UInt64? {
        var earliest = engine.deadline
        if let due = health?.deadline { earliest = min(earliest ?? due, due) }
        for channel in channels {
            if let due = channel.chain.deadline { earliest = min(earliest ?? due, due) }
        }
        return earliest
    }

    func start(at now: UInt64) throws -> [SensorSample] {
        health = SensorHealth(pollIntervalNs: engine.pollIntervalNs, startedAt: now)
        return finish(try engine.start(at: now))
    }

    /// Reads every pending event and runs every deadline up to `now`, in time order, appending
    /// the values to `values`. Returns the next deadline (`deadline` after the step), which the
    /// step has worked out already.
    @discardableResult
    func step(now: UInt64, into values: inout [SensorSample]) -> UInt64? {
        // The buffers are this core's properties, used in place (unique, so appending reuses
        // their storage): local arrays swapped in and out cost a release each per step.
        lineEvents.removeAllKeepingStorage()
        eventEmissions.removeAllKeepingStorage()
        let inputCount = engine.inputCount
        let merges = inputCount > 1
        if merges { mergedEvents.removeAllKeepingStorage() }
        for index in 0..<inputCount {
            let first = lineEvents.count
            do {
                let lost = try engine.readEvents(ofInput: index, into: &lineEvents)
                if lost > 0 {
                    engine.lost(lost, input: index)
                    lostTotal += lost
                    eventEmissions.append(
                        Emission(
                            channel: Emission.lostEventsChannel, reading: .number(Double(lostTotal)),
                            time: first < lineEvents.count ? lineEvents[first].timestampNs : now))
                }
            } catch {
                eventEmissions.append(
                    Emission(
                        channel: Emission.valueChannel, reading: .failure(.gpio("\(error)")), time: now))
            }
            if merges {
                for position in first..<lineEvents.count { mergedEvents.append((lineEvents[position], index)) }
            }
        }
        if merges {
            mergedEvents.sort { $0.event.timestampNs < $1.event.timestampNs }  // stable: keeps per-line order
        }
        let eventCount = lineEvents.count
        var next = 0
        // Nearly always empty here (a read failed or lost events): not worth a call per step.
        if !eventEmissions.isEmpty { finish(draining: &eventEmissions, into: &values) }
        while true {
            let due = deadline
            if let due, due <= now, next == eventCount || eventTime(next, merged: merges) > due {
                if engine.deadline.map({ $0 <= due }) == true {
                    var ticked = engine.tick(at: due)
                    finish(draining: &ticked, into: &values)
                }
                tickFilters(at: due, into: &values)
                if let became = health?.tick(at: due) {
                    var availability = [became]
                    finish(draining: &availability, into: &values)
                }
            } else if next < eventCount {
                if merges {
                    engine.handle(mergedEvents[next].event, input: mergedEvents[next].input, into: &eventEmissions)
                } else {
                    engine.handle(lineEvents[next], input: 0, into: &eventEmissions)
                }
                finish(draining: &eventEmissions, into: &values)
                next += 1
            } else {
                return due
            }
        }
    }

    /// The time of the step's event at `position`, in time order.
    private func eventTime(_ position: Int, merged: Bool) -> UInt64 {
        merged ? mergedEvents[position].event.timestampNs : lineEvents[position].timestampNs
    }

    func write(_ value: Bool, at now: UInt64) throws -> [SensorSample] {
        finish(try engine.write(value, at: now))
    }

    /// Hands the engine's state to the state files' writer, before `stop`.
    func persist(at now: UInt64) {
        engine.persist(at: now)
    }

    /// Releases the engine's lines, once the writer has finished what `persist` handed it;
    /// returns how that save ended (the saved total, or the failure reading of one that did not
    /// succeed).
    func stop() -> [SensorSample] {
        defer { engine.stop() }
        return finish(engine.persisted())
    }

    private func tickFilters(at time: UInt64, into values: inout [SensorSample]) {
        for position in channels.indices {
            for reading in channels[position].chain.tick(at: time) {
                values.append(value(channel: channels[position].name, reading: reading, time: time))
            }
        }
    }

    private func finish(_ emissions: consuming [Emission]) -> [SensorSample] {
        var values: [SensorSample] = []
        finish(draining: &emissions, into: &values)
        return values
    }

    /// Filters the emissions into values appended to `values` (no array of their own per event),
    /// leaving `emissions` empty with its storage kept: each is moved out of it (reversed, then
    /// taken from the end), not copied out, which retained its strings, then released them again
    /// with the array's.
    private func finish(draining emissions: inout [Emission], into values: inout [SensorSample]) {
        emissions.reverseForPoppingInOrder()
        while let emission = emissions.popLast() {
            // Lost-event totals, press events and availability are counts, codes and states: no
            // filter applies to them, and only availability is not a reading of the sensor.
            guard emission.role == .reading else {
                if emission.role == .press, let back = health?.good(at: emission.time) {
                    values.append(value(of: back))
                }
                values.append(value(of: emission))
                continue
            }
            if case .failure(let failure) = emission.reading {
                values.append(value(of: emission))
                if let became = health?.failed(failure, at: emission.time) {
                    values.append(value(of: became))
                }
                continue
            }
            // Back before the value, so whoever shows the value shows it as current.
            if let back = health?.good(at: emission.time) {
                values.append(value(of: back))
            }
            guard filtersValues else {
                values.append(value(of: emission))
                continue
            }
            let position = filteredChannel(emission.channel)
            // In place: a chain copied out and back would copy its state for every value.
            if let filtered = channels[position].chain.apply(emission.reading, at: emission.time) {
                values.append(value(of: emission, reading: filtered))
            }
        }
    }

    /// The position of channel `name` among `channels`, added with its filters on its first
    /// value.
    private func filteredChannel(_ name: String) -> Int {
        if let position = channels.firstIndex(where: { $0.name == name }) { return position }
        let position = channels.firstIndex { $0.name > name } ?? channels.count
        channels.insert(FilteredChannel(name: name, chain: FilterChain(spec.filters)), at: position)
        return position
    }

    /// A filtered channel's value: always a reading.
    private func value(channel: String, reading: SensorSample.Reading, time: UInt64) -> SensorSample {
        SensorSample(sensor: spec.name, channel: channel, role: .reading, reading: reading, timestampNs: time)
    }

    private func value(of emission: Emission, reading: SensorSample.Reading? = nil) -> SensorSample {
        SensorSample(
            sensor: spec.name, channel: emission.channel, role: emission.role, reading: reading ?? emission.reading,
            timestampNs: emission.time)
    }
}
