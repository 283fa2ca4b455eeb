import GPIO
import StateFile
import TestHarness
import Testing

@testable import Sensors

/// The real-time runner, woken by the simulator's readable callbacks; the test moves the
/// simulator's virtual clock and awaits the values the runner delivers, so nothing sleeps.
@Suite struct SensorRunnerTests {
    @Test func runnerStreamsValuesAsEdgesArrive() async throws {
        let door = SimulatedLineConfig(
            name: "DOOR",
            generator: .steps(
                [
                    .init(false, .seconds(1)), .init(true, .seconds(1)), .init(false, .seconds(100))
                ], repeats: false))
        let sim = SimulatedBackend(chips: [SimulatedChipConfig(label: "runner", lines: [door])])
        let runner = try SensorRunner(
            spec: SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOOR"))),
            backend: sim, stateWriter: StateFileWriter())
        let (delivered, deliver) = AsyncStream.makeStream(of: SensorSample.self)
        let task = Task { try await runner.run(delivering: { deliver.yield($0) }) }
        var values = delivered.makeAsyncIterator()
        #expect(await values.next()?.bool == false)
        sim.advance(by: .milliseconds(1_500))
        let opened = await values.next()
        #expect(opened?.bool == true)
        #expect(opened?.timestampNs == 2_000_000_000)
        sim.advance(by: .seconds(1))
        #expect(await values.next()?.bool == false)
        #expect(await runner.latest()["value"]?.bool == false)
        task.cancel()
        try await task.value  // returns once cancelled, having released the line
        #expect(try sim.chips()[0].lines[0].used == false)
    }

    /// The line and the timer reach the runner strongly while it runs: once `run` has returned
    /// nothing keeps it, and a runner never run is not kept either.
    @Test func aRunnerIsFreedOnceItStopsAndWhenNeverRun() async throws {
        let sim = SimulatedBackend(
            chips: [
                SimulatedChipConfig(
                    label: "runner", lines: [SimulatedLineConfig(name: "DOOR"), SimulatedLineConfig(name: "BELL")])
            ])
        weak var ran: SensorRunner?
        weak var neverRan: SensorRunner?
        do {
            let runner = try SensorRunner(
                spec: SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOOR"))),
                backend: sim, stateWriter: StateFileWriter())
            ran = runner
            let idle = try SensorRunner(
                spec: SensorSpec(name: "bell", kind: BinarySettings(line: LineSelector("BELL"))),
                backend: sim, stateWriter: StateFileWriter())
            neverRan = idle
            let (delivered, deliver) = AsyncStream.makeStream(of: SensorSample.self)
            let task = Task { try await runner.run(delivering: { deliver.yield($0) }) }
            var values = delivered.makeAsyncIterator()
            _ = await values.next()
            task.cancel()
            try await task.value
        }
        // The finished task lets go of its closure, and with it the runner, in its own time.
        #expect(await eventually { ran == nil })
        #expect(neverRan == nil)
    }

    @Test func runnerDrivesOutputs() async throws {
        let sim = SimulatedBackend(chips: [SimulatedChipConfig(label: "runner", lines: [SimulatedLineConfig(name: "LED")])])
        let runner = try SensorRunner(
            spec: SensorSpec(name: "led", kind: OutputSensorSettings(line: LineSelector("LED"))),
            backend: sim, stateWriter: StateFileWriter())
        let (delivered, deliver) = AsyncStream.makeStream(of: SensorSample.self)
        let task = Task { try await runner.run(delivering: { deliver.yield($0) }) }
        var values = delivered.makeAsyncIterator()
        #expect(await values.next()?.bool == false)
        try await runner.write(true)
        #expect(await values.next()?.bool == true)
        #expect(try sim.level(of: LineSelector("LED")))
        task.cancel()
        try await task.value
    }
}
