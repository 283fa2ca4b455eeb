import EventLoop
import Foundation
import GPIO
import GPIOLibgpiod
import StateFile
import Testing

@testable import Sensors

/// Sensors end to end on the kernel's gpio-sim (see `LibgpiodBackendTests` in GPIOLibgpiodTests for the
/// chip the VM harness creates).
@Suite(
    .enabled(
        if: ProcessInfo.processInfo.environment["GATTWAY_GPIOSIM_SYSFS"] != nil,
        "needs a gpio-sim chip: set by the VM harness (GATTWAY_GPIOSIM_CHIP)"),
    .serialized)
struct LibgpiodSensorTests {
    let sysfs = ProcessInfo.processInfo.environment["GATTWAY_GPIOSIM_SYSFS"] ?? ""

    func pull(_ offset: Int, high: Bool) throws {
        try (high ? "pull-up" : "pull-down").write(
            toFile: "\(sysfs)/sim_gpio\(offset)/pull", atomically: false,
            encoding: .utf8)
    }

    @Test func binarySensorFollowsTheLine() async throws {
        try pull(0, high: false)
        let backend = LibgpiodBackend()
        let door = try SensorRunner(
            spec: SensorSpec(
                name: "door",
                kind:
                    BinarySettings(
                        line: LineSelector("SIM0", chip: "gattway-sim"))), backend: backend,
            stateWriter: StateFileWriter())
        let (delivered, deliver) = AsyncStream.makeStream(of: SensorSample.self)
        let task = Task { try await door.run(delivering: { deliver.yield($0) }) }
        var values = delivered.makeAsyncIterator()
        #expect(await values.next()?.bool == false)
        try pull(0, high: true)
        let opened = await values.next()
        #expect(opened?.bool == true)
        #expect(opened.map { $0.timestampNs <= EventLoop.now().nanoseconds } == true)
        try pull(0, high: false)
        #expect(await values.next()?.bool == false)
        task.cancel()
        try await task.value
    }

    @Test func outputSensorDrivesTheLine() async throws {
        let backend = LibgpiodBackend()
        let relay = try SensorRunner(
            spec: SensorSpec(
                name: "relay",
                kind: OutputSensorSettings(line: LineSelector("SIM7", chip: "gattway-sim"))), backend: backend,
            stateWriter: StateFileWriter())
        let (delivered, deliver) = AsyncStream.makeStream(of: SensorSample.self)
        let task = Task { try await relay.run(delivering: { deliver.yield($0) }) }
        var values = delivered.makeAsyncIterator()
        #expect(await values.next()?.bool == false)
        try await relay.write(true)
        #expect(await values.next()?.bool == true)
        let level = try String(contentsOfFile: "\(sysfs)/sim_gpio7/value", encoding: .utf8)
        #expect(level.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
        task.cancel()
        try await task.value
    }
}
