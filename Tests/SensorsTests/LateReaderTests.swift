import Foundation
import GPIO
import StateFile
import Testing

@testable import Sensors

/// Sensors that provoke an answer (DHT, HC-SR04) read on a loaded machine, on the virtual clock:
/// the sensor answers when its line changes, whenever gattway gets to run. A DHT's line must be
/// switched to an input in one step, and every answer window must open when the line change
/// really happened, not when the tick making it was due.
@Suite struct LateReaderTests {
    static let start: UInt64 = 1_000_000_000
    let spec = SensorSpec(name: "climate", kind: DHTSettings(model: .dht22, line: LineSelector("DHT")))

    func simulator(
        _ lines: [SimulatedLineConfig] = [
            SimulatedLineConfig(name: "DHT", generator: .dht22(humidity: 48, temperature: 21.5))
        ]
    ) -> SimulatedBackend {
        SimulatedBackend(chips: [SimulatedChipConfig(label: "sensors", lines: lines)], startNs: Self.start)
    }

    /// Runs `core` from deadline to deadline (at most 1 ms at a time) for `duration`, as
    /// `SimulatedSensorDriver` does, but on any backend wrapping `sim`.
    func run(_ core: SensorCore, on sim: SimulatedBackend, for duration: Duration) -> [SensorSample] {
        let end = sim.now() + duration.nanoseconds
        var values: [SensorSample] = []
        while sim.now() < end {
            let next = min(core.deadline ?? .max, end, sim.now() + 1_000_000)
            if next > sim.now() { sim.advance(to: next) }
            values += core.step(now: sim.now())
        }
        return values
    }

    @Test func aSwitchThatRunsLateStillReadsTheWholeFrame() throws {
        let sim = simulator()
        let core = try SensorCore(spec: spec, backend: sim, stateWriter: StateFileWriter(), onReadable: {})
        _ = try core.start(at: sim.now())
        #expect(core.step(now: sim.now()).isEmpty)  // the start signal: the line driven low
        #expect(core.deadline == Self.start + 1_100_000)
        sim.advance(by: .milliseconds(20))  // the reader wakes up 20 ms after that deadline
        let values = core.step(now: sim.now()) + run(core, on: sim, for: .milliseconds(30))
        #expect(values.map(\.channel) == ["temperature", "humidity"])
        #expect(values.map(\.reading) == [.number(21.5), .number(48)])
    }

    @Test func aStartSignalThatBeganLateIsStillHeldLongEnough() throws {
        let sim = simulator()
        let core = try SensorCore(spec: spec, backend: sim, stateWriter: StateFileWriter(), onReadable: {})
        _ = try core.start(at: sim.now())
        sim.advance(by: .milliseconds(5))  // the first tick, due at the start, runs 5 ms late
        var values = core.step(now: sim.now())
        #expect(values.isEmpty)
        #expect(core.deadline == Self.start + 6_100_000)  // the line stays low 1.1 ms from now
        values += run(core, on: sim, for: .milliseconds(30))
        #expect(values.map(\.reading) == [.number(21.5), .number(48)])
    }

    func hcsr04Core(_ sim: SimulatedBackend) throws -> SensorCore {
        try SensorCore(
            spec: SensorSpec(
                name: "tank",
                kind:
                    DistanceSettings(
                        trigger: LineSelector("TRIG"), echo: LineSelector("ECHO"))), backend: sim,
            stateWriter: StateFileWriter(), onReadable: {})
    }

    let hcsr04Lines = [
        SimulatedLineConfig(name: "TRIG"),
        SimulatedLineConfig(name: "ECHO", generator: .hcsr04(trigger: "TRIG", distanceMeters: 1))
    ]

    @Test func aTriggerPulseThatBeganLateIsStillLongEnough() throws {
        let sim = simulator(hcsr04Lines)
        let core = try hcsr04Core(sim)
        _ = try core.start(at: sim.now())
        sim.advance(by: .milliseconds(5))
        var values = core.step(now: sim.now())
        #expect(core.deadline == Self.start + 5_010_000)
        values += run(core, on: sim, for: .milliseconds(60))
        #expect(values.count == 1)
        let meters = try #require(values.first?.number)
        #expect(abs(meters - 1) < 0.01)
    }

    @Test func anEchoAfterALateTriggerEndIsStillMeasured() throws {
        let sim = simulator(hcsr04Lines)
        let core = try hcsr04Core(sim)
        _ = try core.start(at: sim.now())
        #expect(core.step(now: sim.now()).isEmpty)  // the trigger pulse starts
        sim.advance(by: .milliseconds(50))  // its end is 50 ms late, past the 40 ms echo timeout
        let values = core.step(now: sim.now()) + run(core, on: sim, for: .milliseconds(60))
        #expect(values.count == 1)
        let meters = try #require(values.first?.number)
        #expect(abs(meters - 1) < 0.01)
    }

    @Test func noEdgeIsLostWhenEveryGPIOCallIsLate() throws {
        let sim = simulator()
        let lagging = LaggingBackend(sim, lag: .milliseconds(3))
        let core = try SensorCore(spec: spec, backend: lagging, stateWriter: StateFileWriter(), onReadable: {})
        _ = try core.start(at: sim.now())
        let values = run(core, on: sim, for: .milliseconds(100))
        #expect(values.map(\.reading) == [.number(21.5), .number(48)])
    }
}

/// A machine too busy to make GPIO calls on time: each call that requests, drives, releases or
/// switches a line first lets `lag` pass on the simulator's clock, while the simulated sensors
/// keep running.
final class LaggingBackend: GPIOBackend {
    let sim: SimulatedBackend
    let lag: Duration

    init(_ sim: SimulatedBackend, lag: Duration) {
        self.sim = sim
        self.lag = lag
    }

    func chips() throws -> [ChipInfo] { try sim.chips() }
    func now() -> UInt64 { sim.now() }

    func requestInput(
        _ selector: LineSelector, consumer: String, settings: InputSettings,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine {
        sim.advance(by: lag)
        return try sim.requestInput(selector, consumer: consumer, settings: settings, onReadable: onReadable)
    }

    func requestOutput(_ selector: LineSelector, consumer: String, settings: OutputSettings) throws -> any OutputLine {
        sim.advance(by: lag)
        return LaggingOutput(try sim.requestOutput(selector, consumer: consumer, settings: settings), backend: self)
    }
}

final class LaggingOutput: OutputLine {
    let output: any OutputLine
    let backend: LaggingBackend

    init(_ output: any OutputLine, backend: LaggingBackend) {
        self.output = output
        self.backend = backend
    }

    var line: ResolvedLine { output.line }
    func value() throws -> Bool { try output.value() }

    func set(_ value: Bool) throws {
        backend.sim.advance(by: backend.lag)
        try output.set(value)
    }

    func switchToInput(
        bias: GPIOBias, edges: EdgeDetection, debounce: Duration,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine {
        backend.sim.advance(by: backend.lag)
        return try output.switchToInput(bias: bias, edges: edges, debounce: debounce, onReadable: onReadable)
    }

    func release() {
        backend.sim.advance(by: backend.lag)
        output.release()
    }
}

extension SensorCore {
    /// One step's values, in an array of their own.
    func step(now: UInt64) -> [SensorSample] {
        var values: [SensorSample] = []
        step(now: now, into: &values)
        return values
    }
}
