import EventLoop
import FoundationEssentials
import Glibc
import LoopClock
import Synchronization

/// GPIO without hardware: chips with named lines whose levels come from `SignalGenerator`s.
///
/// It behaves like the kernel under libgpiod v2: per-request edge buffers that overwrite their
/// oldest events when full (found again as sequence-number gaps), debounce with the kernel's
/// semantics, EBUSY when a line is requested twice, outputs observable with `level(of:)`.
///
/// Two clocks: `.virtual` for tests (time moves only through `advance`, nothing sleeps, results
/// are deterministic) and `.realTime` for `gattway demo` (CLOCK_MONOTONIC; an event-loop timer wakes
/// the simulator only when a watched line is due to change, on the loop's thread like a kernel
/// line's readable descriptor).
public final class SimulatedBackend: GPIOBackend, @unchecked Sendable {
    public enum Clock: Sendable { case virtual, realTime }

    private let lock = Mutex(())
    // Everything below is guarded by `lock`.
    private var chipStates: [SimulatedChip]
    private var generatedThrough: UInt64
    /// No line changes level and no debouncer settles before this time, so generating up to an
    /// earlier time only moves the clock: a read of a line after its edge, the common case, does
    /// not step every line's waveform again. Worked out by each full generation; a request or an
    /// output driven resets it to 0, since it may bring a change forward; a level received brings
    /// forward at most its line's debouncer settling, and lowers it to that (`receive`).
    private var quietBefore: UInt64 = 0
    private var nextRequestID: UInt64 = 1
    private let clock: Clock
    private var timer: DeadlineTimer?
    /// The time periodic generators start from (their first cycle begins here).
    public let originNs: UInt64

    /// - Parameter startNs: the virtual clock's initial time (ignored in real time).
    public init(chips: [SimulatedChipConfig], clock: Clock = .virtual, startNs: UInt64 = 1_000_000_000) {
        self.clock = clock
        let origin = clock == .virtual ? startNs : EventLoop.now().nanoseconds
        originNs = origin
        generatedThrough = origin
        chipStates = chips.map { SimulatedChip(config: $0, origin: origin) }
        if clock == .realTime {
            timer = DeadlineTimer { [weak self] _ in self?.realTimeWake() }
        }
    }

    // MARK: Clock

    public func now() -> UInt64 {
        clock == .virtual ? lock.withLock { _ in generatedThrough } : EventLoop.now().nanoseconds
    }

    /// Moves the virtual clock forward, generating every edge in between. Virtual clock only.
    public func advance(by duration: Duration) {
        let target = lock.withLock { _ in generatedThrough } + duration.nanoseconds
        advance(to: target)
    }

    /// Moves the virtual clock to `time` (ns). Virtual clock only.
    public func advance(to time: UInt64) {
        precondition(clock == .virtual, "advance(to:) drives the virtual clock only")
        let wakeups = lock.withLock { _ in generateLocked(through: time) }
        wakeups.run()
    }

    private func realTimeWake() {
        let wakeups = lock.withLock { _ in
            let callbacks = generateLocked(through: EventLoop.now().nanoseconds)
            armTimerLocked()
            return callbacks
        }
        wakeups.run()
    }

    /// Levels another program sent to a line's socket: each `0` or `1` is applied in order now,
    /// after every line's changes up to now. Applied to the line at once, not scheduled on its
    /// waveform for a generation of every line to find: the other lines are generated only when
    /// one is due (`quietBefore`), so a level costs no walk of the lines (docs/performance.md).
    private func receive(_ levels: UnsafeBufferPointer<UInt8>, chip c: Int, offset: Int) {
        let wakeups = lock.withLock { _ in
            let now = max(currentTimeLocked, generatedThrough + 1)
            var wakeups = generateLocked(through: now)
            if let onReadable = chipStates[c].lines[offset].receive(levels, at: now) { wakeups.append(onReadable) }
            // A debouncer the levels started settles later: the next generation must not skip
            // it, and in real time the timer wakes the simulator for it, as no datagram may come.
            // (A socket-driven line's waveform changes only by the levels received.)
            if let settles = chipStates[c].lines[offset].debouncerDeadline(), settles < quietBefore {
                quietBefore = settles
                armTimerLocked()
            }
            return wakeups
        }
        wakeups.run()
    }

    /// After a change from outside (a request, an output driven): the next generation steps every
    /// line again, and the real-time timer is armed again.
    private func changedLocked() {
        quietBefore = 0
        armTimerLocked()
    }

    /// Arms the real-time timer for the next change of a watched line, at most every millisecond
    /// (edges in between are generated in one batch with their exact timestamps).
    private func armTimerLocked() {
        guard let timer else { return }
        var next: UInt64?
        for c in chipStates.indices {
            for l in chipStates[c].lines.indices where chipStates[c].lines[l].input != nil {
                if let due = chipStates[c].lines[l].nextDue() { next = min(next ?? due, due) }
            }
        }
        timer.schedule(at: next.map { LoopInstant(nanoseconds: max($0, EventLoop.now().nanoseconds + 1_000_000)) })
    }

    /// Generates edges up to `time`; returns the readable callbacks to run outside the lock.
    private func generateLocked(through time: UInt64) -> Wakeups {
        var wakeups = Wakeups()
        guard time > generatedThrough else { return wakeups }
        defer { generatedThrough = time }
        guard time >= quietBefore else { return wakeups }
        var next = UInt64.max
        for c in chipStates.indices {
            for l in chipStates[c].lines.indices {
                if let onReadable = chipStates[c].lines[l].advance(through: time) { wakeups.append(onReadable) }
                if let due = chipStates[c].lines[l].nextDue() { next = min(next, due) }
            }
        }
        quietBefore = next
        return wakeups
    }

    /// Generates every edge up to now. When no line is due to change ever (`quietBefore` is
    /// `.max`: its lines change only by a level received, an output driven or a request, each of
    /// which lowers it as needed), there is nothing to generate and the clock is not read: so a
    /// read of a socket-driven line, once per edge, spares a clock read.
    private func generateToNowLocked() -> Wakeups {
        guard quietBefore != .max else { return Wakeups() }
        return generateLocked(through: currentTimeLocked)
    }

    private var currentTimeLocked: UInt64 {
        clock == .virtual ? generatedThrough : max(generatedThrough, EventLoop.now().nanoseconds)
    }

    // MARK: Observation

    /// The physical level of a line now, whoever drives it (outputs are observed this way).
    public func level(of selector: LineSelector) throws -> Bool {
        let resolved = try resolve(selector)
        return lock.withLock { _ in
            _ = generateToNowLocked()
            return chipStates[chipIndex(resolved)].lines[resolved.offset].physicalLevel
        }
    }

    // MARK: GPIOBackend

    public func chips() throws -> [ChipInfo] {
        lock.withLock { _ in chipStates.map(\.info) }
    }

    public func requestInput(
        _ selector: LineSelector, consumer: String, settings: InputSettings,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine {
        let resolved = try resolve(selector)
        let (c, id): (Int, UInt64) = try lock.withLock { _ in
            let c = chipIndex(resolved)
            _ = generateToNowLocked()
            try checkFree(c, resolved)
            let id = nextRequestID
            nextRequestID += 1
            if case .socket(let path) = chipStates[c].config.lines[resolved.offset].generator {
                // Strong: the socket is closed, and lets go of this, when the line is released.
                chipStates[c].lines[resolved.offset].levelSocket = try LevelSocket(path: path) { [self] levels in
                    receive(levels, chip: c, offset: resolved.offset)
                }
            }
            chipStates[c].lines[resolved.offset].requestInput(
                id: id, consumer: consumer, settings: settings, onReadable: onReadable)
            changedLocked()
            return (c, id)
        }
        return SimulatedInputLine(backend: self, line: resolved, chip: c, id: id)
    }

    public func requestOutput(
        _ selector: LineSelector, consumer: String,
        settings: OutputSettings
    ) throws -> any OutputLine {
        let resolved = try resolve(selector)
        let id: UInt64 = try lock.withLock { _ in
            let c = chipIndex(resolved)
            let now = currentTimeLocked
            _ = generateLocked(through: now)
            try checkFree(c, resolved)
            let id = nextRequestID
            nextRequestID += 1
            chipStates[c].requestOutput(
                offset: resolved.offset, id: id, consumer: consumer,
                settings: settings, at: now)
            changedLocked()
            return id
        }
        return SimulatedOutputLine(backend: self, line: resolved, id: id)
    }

    private func chipIndex(_ line: ResolvedLine) -> Int {
        chipStates.firstIndex { $0.config.label == line.chip.label }!
    }

    private func checkFree(_ chip: Int, _ line: ResolvedLine) throws {
        let state = chipStates[chip].lines[line.offset]
        if let consumer = state.consumer {
            throw GPIOError.lineBusy(line, consumer: consumer)
        }
    }

    // MARK: Used by the line handles

    /// `body` on input request `id` of `line`, on chip `c` (its index, found when requested:
    /// this runs on every read of the line).
    fileprivate func withInput(
        _ line: ResolvedLine, chip c: Int, id: UInt64, _ body: (inout SimulatedLine.InputRequest) -> Int
    ) throws -> Int {
        let (result, wakeups) = try lock.withLock { _ in
            let wakeups = generateToNowLocked()
            guard let result = chipStates[c].lines[line.offset].withInput(id: id, body) else {
                throw GPIOError.released(line.name)
            }
            return (result, wakeups)
        }
        // Edges this read generated on other lines signal those lines too, as the kernel would:
        // else a line whose edge another line's read generated first (two sensors on one chip)
        // is read only at its own next edge. After this read, on the loop, not inside it.
        if clock == .realTime, !wakeups.isEmpty { EventLoop.shared.execute { wakeups.run() } }
        return result
    }

    fileprivate func inputLevel(_ line: ResolvedLine, id: UInt64) throws -> Bool {
        try lock.withLock { _ in
            _ = generateToNowLocked()
            let state = chipStates[chipIndex(line)].lines[line.offset]
            guard let input = state.input, input.id == id else { throw GPIOError.released(line.name) }
            return input.debouncer?.stableLevel ?? (state.physicalLevel != input.settings.activeLow)
        }
    }

    fileprivate func releaseInput(_ line: ResolvedLine, id: UInt64) {
        lock.withLock { _ in
            let c = chipIndex(line)
            if chipStates[c].lines[line.offset].input?.id == id {
                chipStates[c].lines[line.offset].input = nil
                chipStates[c].lines[line.offset].levelSocket?.close()
                chipStates[c].lines[line.offset].levelSocket = nil
                changedLocked()
            }
        }
    }

    fileprivate func setOutput(_ line: ResolvedLine, id: UInt64, _ value: Bool) throws {
        try lock.withLock { _ in
            let now = currentTimeLocked
            _ = generateLocked(through: now)
            let c = chipIndex(line)
            guard chipStates[c].lines[line.offset].output?.id == id else { throw GPIOError.released(line.name) }
            chipStates[c].drive(offset: line.offset, value: value, at: now)
            changedLocked()
        }
    }

    /// Turns output `id` into an input within one hold of the lock, at one instant of the
    /// simulator's clock: every edge after the switch reaches the input, whenever the caller runs.
    fileprivate func switchToInput(
        _ line: ResolvedLine, id: UInt64, bias: GPIOBias, edges: EdgeDetection,
        debounce: Duration, onReadable: @escaping @Sendable () -> Void
    ) throws -> (chip: Int, id: UInt64) {
        try lock.withLock { _ in
            let now = currentTimeLocked
            _ = generateLocked(through: now)
            let c = chipIndex(line)
            guard let output = chipStates[c].lines[line.offset].output, output.id == id else {
                throw GPIOError.released(line.name)
            }
            let inputID = nextRequestID
            nextRequestID += 1
            let settings = InputSettings(
                bias: bias, activeLow: output.activeLow, edges: edges, debounce: debounce,
                eventBufferSize: output.eventBufferSize)
            chipStates[c].switchToInput(
                offset: line.offset, id: inputID, settings: settings,
                onReadable: onReadable, at: now)
            changedLocked()
            return (c, inputID)
        }
    }

    fileprivate func outputValue(_ line: ResolvedLine, id: UInt64) throws -> Bool {
        try lock.withLock { _ in
            guard let output = chipStates[chipIndex(line)].lines[line.offset].output, output.id == id else {
                throw GPIOError.released(line.name)
            }
            return output.value
        }
    }

    fileprivate func releaseOutput(_ line: ResolvedLine, id: UInt64) {
        lock.withLock { _ in
            let now = currentTimeLocked
            _ = generateLocked(through: now)
            let c = chipIndex(line)
            guard chipStates[c].lines[line.offset].output?.id == id else { return }
            chipStates[c].releaseOutput(offset: line.offset, at: now)
            changedLocked()
        }
    }
}

/// The readable callbacks of the lines that got events in one step of the simulator, run once
/// the lock is released. The first is kept inline: one line changing at a time (the common case)
/// costs no array.
private struct Wakeups: Sendable {
    private var first: (@Sendable () -> Void)?
    private var others: [@Sendable () -> Void] = []

    var isEmpty: Bool { first == nil }

    mutating func append(_ onReadable: @escaping @Sendable () -> Void) {
        if first == nil { first = onReadable } else { others.append(onReadable) }
    }

    func run() {
        first?()
        for onReadable in others { onReadable() }
    }
}

/// One simulated chip: its lines, and the wiring of reactive sensors between them.
private struct SimulatedChip {
    let config: SimulatedChipConfig
    var lines: [SimulatedLine]
    /// When the simulator started: generators' times count from here.
    let origin: UInt64

    init(config: SimulatedChipConfig, origin: UInt64) {
        self.config = config
        self.origin = origin
        lines = config.lines.enumerated().map { SimulatedLine(offset: $0.offset, config: $0.element, origin: origin) }
    }

    var info: ChipInfo {
        ChipInfo(
            path: "sim:\(config.label)", name: config.label, label: config.label,
            lines: lines.map(\.info))
    }

    mutating func requestOutput(offset: Int, id: UInt64, consumer: String, settings: OutputSettings, at now: UInt64) {
        let before = lines[offset].physicalLevel
        lines[offset].output = .init(
            id: id, consumer: consumer, activeLow: settings.activeLow,
            value: settings.initialValue, eventBufferSize: settings.eventBufferSize)
        physicalChange(offset: offset, from: before, at: now)
    }

    mutating func drive(offset: Int, value: Bool, at now: UInt64) {
        let before = lines[offset].physicalLevel
        lines[offset].output?.value = value
        physicalChange(offset: offset, from: before, at: now)
    }

    mutating func releaseOutput(offset: Int, at now: UInt64) {
        let before = lines[offset].physicalLevel
        lines[offset].output = nil
        physicalChange(offset: offset, from: before, at: now)
    }

    /// The output stops driving and the input (same consumer) is in place at the same instant,
    /// before the sensors react to the change, so their whole answer reaches the input.
    mutating func switchToInput(
        offset: Int, id: UInt64, settings: InputSettings,
        onReadable: @escaping @Sendable () -> Void, at now: UInt64
    ) {
        let before = lines[offset].physicalLevel
        let consumer = lines[offset].output?.consumer ?? ""
        lines[offset].output = nil
        lines[offset].requestInput(id: id, consumer: consumer, settings: settings, onReadable: onReadable)
        physicalChange(offset: offset, from: before, at: now)
    }

    private static func silent(_ silence: SignalGenerator.Silence?, at now: UInt64, origin: UInt64) -> Bool {
        guard let silence, now >= origin else { return false }
        return silence.contains(.nanoseconds(Int64(clamping: now - origin)))
    }

    /// Lets simulated sensors react to what gattway drives: a DHT answers the release of its
    /// start signal, an HC-SR04 echoes the end of its trigger pulse.
    private mutating func physicalChange(offset: Int, from before: Bool, at now: UInt64) {
        let after = lines[offset].physicalLevel
        guard after != before else { return }
        let heldSince = lines[offset].physicalSince
        lines[offset].physicalSince = now
        let held = now - heldSince
        if after, !before {
            switch config.lines[offset].generator {
            case .dht22(let humidity, let temperature, let corrupt, let silence)
            where held >= SimulatedSensorTiming.dht22MinimumStartNs && !Self.silent(silence, at: now, origin: origin):
                lines[offset].waveform.schedule(
                    SensorWaveforms.dhtFrame(
                        bytes: SensorWaveforms.dht22Bytes(
                            humidity: humidity, temperature: temperature,
                            corruptChecksum: corrupt), release: now))
            case .dht11(let humidity, let temperature, let corrupt, let silence)
            where held >= SimulatedSensorTiming.dht11MinimumStartNs && !Self.silent(silence, at: now, origin: origin):
                lines[offset].waveform.schedule(
                    SensorWaveforms.dhtFrame(
                        bytes: SensorWaveforms.dht11Bytes(
                            humidity: humidity, temperature: temperature,
                            corruptChecksum: corrupt), release: now))
            default: break
            }
        }
        if before, !after, held >= SimulatedSensorTiming.hcsr04MinimumTriggerNs {
            let name = config.lines[offset].name
            for echo in lines.indices {
                if case .hcsr04(let trigger, let distance) = config.lines[echo].generator, trigger == name {
                    lines[echo].waveform.schedule(SensorWaveforms.echo(distanceMeters: distance, triggerEnd: now))
                }
            }
        }
    }
}

/// One simulated line: its waveform and the request holding it.
private struct SimulatedLine {
    struct InputRequest {
        let id: UInt64
        let consumer: String
        let settings: InputSettings
        let onReadable: @Sendable () -> Void
        var ring: EdgeEventRing
        var loss = LossDetector(mode: .sequenceNumbers)
        var debouncer: SoftwareDebouncer?
        var sequence: UInt64 = 0
        var lostTotal = 0

        /// Advances `waveform` through `time`, queueing the edges it makes when it `delivers`
        /// (the line is not driven by an output); whether any was queued.
        mutating func take(_ waveform: inout Waveform, through time: UInt64, delivers: Bool) -> Bool {
            var queued = false
            while let change = waveform.nextChange(through: time) {
                if delivers { queued = apply(change) || queued }
            }
            if let (confirmed, at) = debouncer?.flush(through: time) {
                queued = emit(confirmed, at: at) || queued
            }
            return queued
        }

        /// One change of the line's level: an edge, through the debouncer when there is one;
        /// whether an event was queued.
        mutating func apply(_ change: Waveform.Transition) -> Bool {
            let edge: Edge = (change.level != settings.activeLow) ? .rising : .falling
            guard debouncer != nil else { return emit(edge, at: change.time) }
            guard let (confirmed, at) = debouncer!.feed(edge, at: change.time) else { return false }
            return emit(confirmed, at: at)
        }

        mutating func emit(_ edge: Edge, at time: UInt64) -> Bool {
            guard settings.edges.accepts(edge) else { return false }
            sequence += 1
            ring.append(EdgeEvent(edge: edge, timestampNs: time, sequence: sequence))
            return true
        }

        mutating func read(into events: inout [EdgeEvent]) -> Int {
            let first = events.count
            ring.drain(into: &events)
            _ = ring.takeOverwritten()  // found again below as sequence gaps, like on the kernel
            var lost = 0
            for position in first..<events.count { lost += loss.missing(before: events[position]) }
            lostTotal += lost
            return lost
        }
    }

    struct OutputRequest {
        let id: UInt64
        let consumer: String
        let activeLow: Bool
        var value: Bool
        /// For the input this output may be switched to.
        let eventBufferSize: Int
    }

    let offset: Int
    let name: String
    var waveform: Waveform
    var input: InputRequest?
    var output: OutputRequest?
    var physicalSince: UInt64
    /// Where another program sends this line's levels, while an input holds it.
    var levelSocket: LevelSocket?

    init(offset: Int, config: SimulatedLineConfig, origin: UInt64) {
        self.offset = offset
        name = config.name
        waveform = Waveform(config.generator, origin: origin)
        physicalSince = origin
    }

    var consumer: String? { input?.consumer ?? output?.consumer }

    var physicalLevel: Bool {
        if let output { return output.value != output.activeLow }
        if waveform.driven { return waveform.level }
        return input?.settings.bias == .pullUp
    }

    var info: LineInfo {
        LineInfo(
            offset: offset, name: name, consumer: consumer ?? "", used: consumer != nil,
            direction: output != nil ? .output : .input,
            activeLow: input?.settings.activeLow ?? output?.activeLow ?? false,
            bias: input?.settings.bias ?? .asIs)
    }

    mutating func requestInput(
        id: UInt64, consumer: String, settings: InputSettings,
        onReadable: @escaping @Sendable () -> Void
    ) {
        let logical = physicalLevel != settings.activeLow
        let debounceNs = settings.debounce.nanoseconds
        input = InputRequest(
            id: id, consumer: consumer, settings: settings, onReadable: onReadable,
            ring: EdgeEventRing(capacity: settings.effectiveBufferSize),
            debouncer: debounceNs > 0 ? SoftwareDebouncer(periodNs: debounceNs, initialLevel: logical) : nil)
    }

    /// Advances the waveform; returns the input request's readable callback when new events
    /// were queued for it. The request is changed in place: a copy would share its ring's
    /// storage, which the first event appended would then copy.
    mutating func advance(through time: UInt64) -> (@Sendable () -> Void)? {
        guard input != nil else {
            while waveform.nextChange(through: time) != nil {}
            return nil
        }
        let delivers = output == nil && waveform.driven
        // One unwrap for the whole advance: the request is a large optional, and every `input!`
        // tests its case again.
        return input!.take(&waveform, through: time, delivers: delivers) ? input!.onReadable : nil
    }

    /// Levels received from the line's socket, applied in order at `time`; returns the input
    /// request's readable callback when they queued events for it. A level received while an
    /// output drives the line, or after the input let it go, only sets the waveform's level.
    mutating func receive(_ levels: UnsafeBufferPointer<UInt8>, at time: UInt64) -> (@Sendable () -> Void)? {
        var queued = false
        for byte in levels where byte == UInt8(ascii: "0") || byte == UInt8(ascii: "1") {
            let level = byte == UInt8(ascii: "1")
            guard waveform.receive(level), input != nil, output == nil else { continue }
            queued = input!.apply(Waveform.Transition(time: time, level: level)) || queued
        }
        return queued ? input!.onReadable : nil
    }

    /// When the input's debouncer settles the level it holds pending, if it holds one. A method,
    /// as `withInput` is, so that it reads in place: a property read through the chip's array of
    /// lines copied the whole line.
    mutating func debouncerDeadline() -> UInt64? { input?.debouncer?.deadline }

    /// When the line next changes level or its debouncer settles, if ever.
    mutating func nextDue() -> UInt64? {
        let change = waveform.nextChangeTime()
        guard let settles = input?.debouncer?.deadline else { return change }
        return min(change ?? settles, settles)
    }

    /// `body` on the input request when it is request `id`, nil when it is not. In place: the
    /// request's id read through the chip's array of lines copies the whole line.
    mutating func withInput(id: UInt64, _ body: (inout InputRequest) -> Int) -> Int? {
        guard input?.id == id else { return nil }
        return body(&input!)
    }
}

/// An input handle on the simulator.
final class SimulatedInputLine: InputLine {
    private let backend: SimulatedBackend
    let line: ResolvedLine
    /// The line's chip among the backend's.
    private let chip: Int
    private let id: UInt64

    fileprivate init(backend: SimulatedBackend, line: ResolvedLine, chip: Int, id: UInt64) {
        self.backend = backend
        self.line = line
        self.chip = chip
        self.id = id
    }

    deinit { backend.releaseInput(line, id: id) }

    func value() throws -> Bool { try backend.inputLevel(line, id: id) }

    func readEvents(into events: inout [EdgeEvent]) throws -> Int {
        try backend.withInput(line, chip: chip, id: id) { request in request.read(into: &events) }
    }

    var lostEvents: Int { (try? backend.withInput(line, chip: chip, id: id) { request in request.lostTotal }) ?? 0 }

    func release() { backend.releaseInput(line, id: id) }
}

/// An output handle on the simulator.
final class SimulatedOutputLine: OutputLine {
    private let backend: SimulatedBackend
    let line: ResolvedLine
    private let id: UInt64

    fileprivate init(backend: SimulatedBackend, line: ResolvedLine, id: UInt64) {
        self.backend = backend
        self.line = line
        self.id = id
    }

    deinit { backend.releaseOutput(line, id: id) }

    func set(_ value: Bool) throws { try backend.setOutput(line, id: id, value) }
    func value() throws -> Bool { try backend.outputValue(line, id: id) }

    func switchToInput(
        bias: GPIOBias, edges: EdgeDetection, debounce: Duration,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine {
        let input = try backend.switchToInput(
            line, id: id, bias: bias, edges: edges, debounce: debounce,
            onReadable: onReadable)
        return SimulatedInputLine(backend: backend, line: line, chip: input.chip, id: input.id)
    }

    func release() { backend.releaseOutput(line, id: id) }
}
