import EventLoop
import GPIO
import LoopClock
import StateFile

/// Runs one sensor in real time and hands each of its values to a consumer.
///
/// The runner sleeps until a line signals pending edge events (the event loop watching the
/// request's fd, or the simulator's loop timer) or until the sensor's next deadline (a loop
/// timer); it never polls. Those signals arrive on the event loop, the runner's executor, and the
/// sensor steps right there: no task, stream or thread between an edge and `deliver`.
///
/// ```swift
/// let runner = try SensorRunner(spec: spec, backend: LibgpiodBackend(), stateWriter: writer)
/// Task { try await runner.run { value in … } }   // until the task is cancelled
/// try await runner.write(true)                    // output sensors only
/// ```
public actor SensorRunner {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public nonisolated let name: String
    private let backend: any GPIOBackend
    private let stateWriter: StateFileWriter
    private let core: SensorCore
    /// The latest value of each channel: an array searched by channel, not a dictionary keyed by
    /// it, which would hash the channel's name on every value (a sensor has one to three).
    private var latestValues: [SensorSample] = []
    /// The values of one step, kept between steps so a step allocates no array for them.
    private var stepValues: [SensorSample] = []
    /// The consumer while `run` runs.
    private var deliver: (@Sendable (SensorSample) -> Void)?
    /// Wakes the runner at the sensor's deadline.
    private let timer: DeadlineTimer
    /// How the line and the timer, made before the runner, reach it: set while `run` runs, nil
    /// before and after, when their signals have nothing to step. Strong, and so a cycle only
    /// while running: a weak reference would give the runner a side table, and every retain and
    /// release of it would take the runtime's slow path (docs/performance.md).
    private let running: LoopBound<SensorRunner?>

    /// Requests the sensor's lines at once, so a missing or busy line fails here. `stateWriter`
    /// writes what the sensor keeps across restarts (a counter's total).
    public init(spec: SensorSpec, backend: any GPIOBackend, stateWriter: StateFileWriter) throws {
        name = spec.name
        self.backend = backend
        self.stateWriter = stateWriter
        let running = LoopBound<SensorRunner?>(nil)
        timer = DeadlineTimer { _ in Self.step(running) }
        core = try SensorCore(
            spec: spec, backend: backend, stateWriter: stateWriter, onReadable: { Self.stepOnLoop(running) })
        self.running = running
    }

    /// The latest value of each channel.
    public func latest() -> [String: SensorSample] {
        Dictionary(uniqueKeysWithValues: latestValues.map { ($0.channel, $0) })
    }

    /// Drives an output sensor.
    public func write(_ value: Bool) throws {
        var written = try core.write(value, at: backend.now())
        publish(draining: &written)
    }

    /// Reads the sensor, handing every value to `deliver` in order, on the event loop and
    /// isolated to this runner, until the surrounding task is cancelled; then saves what it keeps
    /// across restarts (waiting for the state files' writer, not blocking the loop) and releases
    /// its lines.
    public func run(delivering deliver: @escaping @Sendable (SensorSample) -> Void) async throws {
        self.deliver = deliver
        running.value = self
        defer {
            running.value = nil
            timer.cancel()
            var stopped = core.stop()
            publish(draining: &stopped)
            self.deliver = nil
        }
        var started = try core.start(at: backend.now())
        publish(draining: &started)
        step()
        // Ends when the task is cancelled (an AsyncStream's iteration is); the continuation is kept
        // so the stream does not end before.
        let (cancelled, keepOpen) = AsyncStream<Never>.makeStream()
        for await _ in cancelled {}
        keepOpen.finish()
        core.persist(at: backend.now())
        await stateWriter.idle()
    }

    private func step() {
        guard deliver != nil else { return }
        // Swapped out while in use (a swap neither retains nor releases): a consumer that steps
        // this runner again meanwhile gets an array of its own.
        var values: [SensorSample] = []
        swap(&values, &stepValues)
        let deadline = core.step(now: backend.now(), into: &values)
        publish(draining: &values)
        swap(&values, &stepValues)
        schedule(deadline)
    }

    /// Schedules the timer for the sensor's deadline, which is on the backend's clock: the
    /// simulator's virtual clock may run apart from the loop's, so a wake-up before the deadline
    /// steps nothing and schedules again for what is left.
    private func schedule(_ deadline: UInt64?) {
        guard let deadline else { return }
        let now = backend.now()
        timer.schedule(at: LoopInstant(nanoseconds: EventLoop.now().nanoseconds + (deadline > now ? deadline - now : 0)))
    }

    /// Hands `values` to the consumer in order, leaving the array empty (its storage kept): each
    /// value is moved out of it (reversed, then taken from the end), not copied out, which
    /// retained its strings, then released them again with the array's.
    private func publish(draining values: inout [SensorSample]) {
        values.reverseForPoppingInOrder()
        while let value = values.popLast() {
            // A failure, or the sensor's availability, is reported, not kept: the latest value stays
            // the last one read, as the characteristics carrying it keep theirs.
            if case .failure = value.reading {
                deliver?(value)
                continue
            }
            guard value.role != .availability else {
                deliver?(value)
                continue
            }
            deliver?(value)
            // Kept after it is delivered, its last use: the value moves into the list rather than
            // being copied there (each copy retains its strings).
            if let position = latestValues.firstIndex(where: { $0.channel == value.channel }) {
                latestValues[position] = value
            } else {
                latestValues.append(value)
            }
        }
    }

    /// A line's edges are read on the event loop: at once when the line signals there (the
    /// kernel's descriptor, the simulator's real-time timer), else (the simulator's virtual
    /// clock, moved by a test) after the loop's queued work.
    private static func stepOnLoop(_ running: LoopBound<SensorRunner?>) {
        if EventLoop.inSharedLoop {
            step(running)
        } else {
            EventLoop.shared.execute { step(running) }
        }
    }

    /// On the loop: steps the runner if it is running.
    private static func step(_ running: LoopBound<SensorRunner?>) {
        // Taken out first, so the box is not being read while the step runs.
        guard let runner = running.value else { return }
        runner.onLoop { $0.step() }
    }
}

/// Runs sensors against a `SimulatedBackend` on its virtual clock: time moves from one deadline
/// to the next (at most `maxStep` at a time, the way a real reader drains its lines), so whole
/// minutes of waveforms decode in milliseconds, identically on every run.
public final class SimulatedSensorDriver {
    private let backend: SimulatedBackend
    private let stateWriter: StateFileWriter
    private var cores: [SensorCore] = []
    private let maxStepNs: UInt64

    /// `stateWriter` writes what the sensors keep (a counter's total); each step first waits for
    /// it to finish what the steps before handed it, so a save ends at the next step, whatever
    /// the disk's speed, and runs give the same values every time.
    public init(
        backend: SimulatedBackend, sensors: [SensorSpec], stateWriter: StateFileWriter,
        maxStep: Duration = .milliseconds(1)
    ) throws {
        self.backend = backend
        self.stateWriter = stateWriter
        maxStepNs = maxStep.nanoseconds
        cores = try sensors.map {
            try SensorCore(spec: $0, backend: backend, stateWriter: stateWriter, onReadable: {})
        }
    }

    /// Starts every sensor; returns their initial values.
    public func start() throws -> [SensorSample] {
        try cores.flatMap { try $0.start(at: backend.now()) }
    }

    /// Advances virtual time by `duration`, returning every value produced, in order per sensor.
    public func run(for duration: Duration) -> [SensorSample] {
        let end = backend.now() + duration.nanoseconds
        var values: [SensorSample] = []
        repeat {
            let now = backend.now()
            let due = cores.compactMap(\.deadline).min() ?? .max
            let next = min(due, end, now + maxStepNs)
            if next > now { backend.advance(to: next) }
            stateWriter.waitUntilIdle()
            for core in cores { core.step(now: backend.now(), into: &values) }
        } while backend.now() < end
        return values
    }

    /// Writes to the output sensor named `sensor`.
    public func write(_ sensor: String, _ value: Bool) throws -> [SensorSample] {
        guard let core = cores.first(where: { $0.spec.name == sensor }) else {
            throw SensorError.unknownSensor(sensor)
        }
        return try core.write(value, at: backend.now())
    }

    /// Stops every sensor, persisting state and releasing lines; returns the failure readings of
    /// state that could not be saved.
    @discardableResult
    public func stop() -> [SensorSample] {
        for core in cores { core.persist(at: backend.now()) }
        stateWriter.waitUntilIdle()
        return cores.flatMap { $0.stop() }
    }
}
