import GPIO

/// Runs one sensor in real time and streams its values.
///
/// The runner sleeps until a line signals pending edge events (DispatchSource on the request's
/// fd, or the simulator's timer) or until the sensor's next deadline; it never polls.
///
/// ```swift
/// let runner = try SensorRunner(spec: spec, backend: LibgpiodBackend())
/// Task { try await runner.run() }          // until the task is cancelled
/// for await value in runner.values { … }   // SensorValue stream
/// try await runner.write(true)             // output sensors only
/// ```
public actor SensorRunner {
    public nonisolated let name: String
    /// Every value the sensor produces, in order. Finishes when `run()` returns.
    public nonisolated let values: AsyncStream<SensorValue>
    private let valuesContinuation: AsyncStream<SensorValue>.Continuation
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let backend: any GPIOBackend
    private let core: SensorCore
    private var latestValues: [String: SensorValue] = [:]
    private var timer: Task<Void, Never>?
    private var timerDeadline: UInt64?

    /// Requests the sensor's lines at once, so a missing or busy line fails here.
    /// - Parameter bufferSize: values kept for a slow consumer; the oldest are dropped beyond it.
    public init(spec: SensorSpec, backend: any GPIOBackend, bufferSize: Int = 1024) throws {
        name = spec.name
        self.backend = backend
        (values, valuesContinuation) = AsyncStream.makeStream(of: SensorValue.self,
                                                             bufferingPolicy: .bufferingNewest(bufferSize))
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.wakes = wakes
        self.wake = wake
        core = try SensorCore(spec: spec, backend: backend, onReadable: { wake.yield() })
    }

    /// The latest value of each channel.
    public func latest() -> [String: SensorValue] { latestValues }

    /// Drives an output sensor.
    public func write(_ value: Bool) throws {
        publish(try core.write(value, at: backend.now()))
    }

    /// Reads the sensor until the surrounding task is cancelled, then releases its lines.
    public func run() async throws {
        defer {
            timer?.cancel()
            core.stop()
            valuesContinuation.finish()
        }
        publish(try core.start(at: backend.now()))
        wake.yield()
        for await _ in wakes {
            publish(core.step(now: backend.now()))
            armTimer()
        }
    }

    private func armTimer() {
        guard core.deadline != timerDeadline else { return }
        timer?.cancel()
        timerDeadline = core.deadline
        guard let deadline = timerDeadline else { return }
        let (wake, backend) = (wake, backend)
        timer = Task {
            // Sleeps on the backend's clock, so an early wake-up sleeps again instead of
            // leaving the deadline unserved.
            while !Task.isCancelled, case let now = backend.now(), now < deadline {
                try? await Task.sleep(for: .nanoseconds(Int64(clamping: deadline - now)))
            }
            if !Task.isCancelled { wake.yield() }
        }
    }

    private func publish(_ new: [SensorValue]) {
        for value in new {
            latestValues[value.channel] = value
            valuesContinuation.yield(value)
        }
    }
}

/// Runs sensors against a `SimulatedBackend` on its virtual clock: time moves from one deadline
/// to the next (at most `maxStep` at a time, the way a real reader drains its lines), so whole
/// minutes of waveforms decode in milliseconds, identically on every run.
public final class SimulatedSensorDriver {
    private let backend: SimulatedBackend
    private var cores: [SensorCore] = []
    private let maxStepNs: UInt64

    public init(backend: SimulatedBackend, sensors: [SensorSpec], maxStep: Duration = .milliseconds(1)) throws {
        self.backend = backend
        maxStepNs = maxStep.nanoseconds
        cores = try sensors.map { try SensorCore(spec: $0, backend: backend, onReadable: {}) }
    }

    /// Starts every sensor; returns their initial values.
    public func start() throws -> [SensorValue] {
        try cores.flatMap { try $0.start(at: backend.now()) }
    }

    /// Advances virtual time by `duration`, returning every value produced, in order per sensor.
    public func run(for duration: Duration) -> [SensorValue] {
        let end = backend.now() + duration.nanoseconds
        var values: [SensorValue] = []
        repeat {
            let now = backend.now()
            let due = cores.compactMap(\.deadline).min() ?? .max
            let next = min(due, end, now + maxStepNs)
            if next > now { backend.advance(to: next) }
            for core in cores { values += core.step(now: backend.now()) }
        } while backend.now() < end
        return values
    }

    /// Writes to the output sensor named `sensor`.
    public func write(_ sensor: String, _ value: Bool) throws -> [SensorValue] {
        guard let core = cores.first(where: { $0.spec.name == sensor }) else {
            throw SensorError.unknownSensor(sensor)
        }
        return try core.write(value, at: backend.now())
    }

    /// Stops every sensor, releasing lines and persisting state.
    public func stop() {
        cores.forEach { $0.stop() }
    }
}
