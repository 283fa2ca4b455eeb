import Foundation
import GPIO
import Sensors
import StateFile

// Edge events from the simulated backend processed end to end into sensor values.
//
// 1. Real time: a 200 kHz pulse train (200,000 rising-edge events per second) on a simulated
//    line, read by a counter sensor through `SensorRunner` (the service's own path: readable
//    callback → runner wake → read → sensor). Zero loss means no lost-event value appeared and
//    every reported total grew by exactly the pulses generated between the two values'
//    timestamps (pulses before the line was requested are not the sensor's, hence the offset).
// 2. Virtual time: the same pipeline as fast as it goes (`SimulatedSensorDriver`), events/s of CPU.
// 3. Overflow: a buffer far too small for the rate; the loss must appear as a lost-event count
//    and match exactly what was generated but not delivered.

let seconds = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 5
let hertz = 200_000
let periodNs = UInt64(1_000_000_000 / hertz)

func counterSpec(buffer: Int, report: Duration) -> SensorSpec {
    SensorSpec(
        name: "pulses", kind: CounterSettings(line: LineSelector("PULSES"), reportInterval: report),
        eventBufferSize: buffer)
}

func chip(_ rate: Int) -> [SimulatedChipConfig] {
    [
        SimulatedChipConfig(
            label: "bench",
            lines: [
                SimulatedLineConfig(name: "PULSES", generator: .pulses(perSecond: Double(rate), width: .nanoseconds(1_000)))
            ])
    ]
}

// MARK: 1. Real time
do {
    let sim = SimulatedBackend(chips: chip(hertz), clock: .realTime)
    let runner = try SensorRunner(
        spec: counterSpec(buffer: 16_384, report: .milliseconds(100)), backend: sim, stateWriter: StateFileWriter())
    let (values, deliver) = AsyncStream.makeStream(of: SensorSample.self, bufferingPolicy: .bufferingNewest(100_000))
    let task = Task {
        defer { deliver.finish() }
        try await runner.run(delivering: { deliver.yield($0) })
    }
    let consumer = Task {
        var checked = 0
        var mismatches = 0
        var lost = 0
        var last: SensorSample?
        var offset: UInt64?
        for await value in values.dropFirst() {  // the first is the total before any read
            if value.channel == "lost_events" {
                lost = Int(value.number ?? 0)
                continue
            }
            let generated = (value.timestampNs - sim.originNs) / periodNs
            if offset == nil { offset = generated - UInt64(value.number ?? 0) }
            let expected = generated - offset!
            let total = UInt64(value.number ?? -1)
            if total != expected {
                mismatches += 1
                if mismatches <= 3 { print("  mismatch at \(value.timestampNs - sim.originNs) ns: \(total) != \(expected)") }
            }
            checked += 1
            last = value
        }
        return (checked, mismatches, lost, last)
    }
    let cpuStart = ProcessInfo.processInfo.systemUptime
    let clockStart = clock()
    try await Task.sleep(for: .seconds(seconds))
    task.cancel()
    _ = try await task.value
    let (checked, mismatches, lost, last) = await consumer.value
    let elapsed = ProcessInfo.processInfo.systemUptime - cpuStart
    let cpu = Double(clock() - clockStart) / Double(CLOCKS_PER_SEC)
    let events = Double(last?.number ?? 0)
    print(
        "real time: \(Int(events)) events in \(String(format: "%.2f", elapsed)) s = "
            + "\(Int(events / elapsed)) events/s, \(checked) values checked, \(mismatches) mismatches, "
            + "lost \(lost), CPU \(String(format: "%.0f", cpu / elapsed * 100)) %")
}

// MARK: 2. Virtual time, as fast as possible
do {
    let rate = 1_000_000
    let sim = SimulatedBackend(chips: chip(rate))
    let driver = try SimulatedSensorDriver(
        backend: sim, sensors: [counterSpec(buffer: 16_384, report: .seconds(1))], stateWriter: StateFileWriter(),
        maxStep: .milliseconds(10))
    _ = try driver.start()
    let start = ProcessInfo.processInfo.systemUptime
    let values = driver.run(for: .seconds(seconds))
    let elapsed = ProcessInfo.processInfo.systemUptime - start
    let total = values.last { $0.channel == "value" }?.number ?? 0
    let lost = values.last { $0.channel == "lost_events" }?.number ?? 0
    print(
        "virtual time: \(Int(total)) events in \(String(format: "%.2f", elapsed)) s = "
            + "\(Int(total / elapsed)) events/s (expected \(rate * seconds), lost \(Int(lost)))")
}

// MARK: 3. Overflow is reported, never silent
do {
    let rate = 100_000
    let sim = SimulatedBackend(chips: chip(rate))
    let driver = try SimulatedSensorDriver(
        backend: sim, sensors: [counterSpec(buffer: 64, report: .seconds(1))], stateWriter: StateFileWriter(),
        maxStep: .milliseconds(10))
    _ = try driver.start()
    let values = driver.run(for: .seconds(1))
    let lost = Int(values.last { $0.channel == "lost_events" }?.number ?? 0)
    let total = Int(values.last { $0.channel == "value" }?.number ?? 0)
    print(
        "overflow: \(rate) events through a 64-event buffer read every 10 ms: \(lost) reported lost, "
            + "\(total - lost) delivered, total still \(total)")
}
