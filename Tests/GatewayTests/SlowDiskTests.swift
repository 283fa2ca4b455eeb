import BluetoothGATT
import EventLoop
import Foundation
import GPIO
import Sensors
import StateFile
import Synchronization
import TestHarness
import Testing

@testable import Gateway

/// A disk that takes 200 ms per write (the state files' writer with an injected delay, as an SD
/// card in a bad moment) does not reach the event loop: a door's edges still reach the pipeline and
/// its subscriber's notification within milliseconds, while a counter pulsing beside it has a
/// total written for every report (the writer never idle) and reports only what is on disk.
@Suite(.timeLimit(.minutes(1)))
struct SlowDiskTests {
    static let yaml = """
        device: {name: slowdisk}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DOOR
                - name: METER
        sensors:
          - {id: door, kind: binary, line: DOOR}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                name: door
                format: bool
                source: {sensor: door}
        """

    /// What the door's and the counter's deliveries saw, on the loop.
    final class Observations: Sendable {
        let seen = Mutex(Observed())
    }

    struct Observed {
        /// Per door value: when its edge was, and how long after it the value reached the pipeline.
        var door: [(edgeNs: UInt64, latencyNs: UInt64)] = []
        /// When each notification of the door went to the subscriber's link.
        var notified: [UInt64] = []
        /// Per counter total: the total and the one in its file as it was delivered.
        var counter: [(reported: Double, saved: Double)] = []
    }

    @Test func edgesAndNotificationsKeepTheirTimingWhileTheDiskIsSlow() async throws {
        let state = try temporaryDirectory("slowdisk").path
        let writer = StateFileWriter(delayBeforeEachWrite: .milliseconds(200))
        let fixture = try await PipelineFixture(
            yaml: Self.yaml, timing: .realTime, triggerFile: TriggerFile(stateDirectory: state, writer: writer))
        let alice = CentralID(1)
        await fixture.subscribe(alice, to: "gateway/door")
        // The host's transmit queue has room: notifications go to the link as they are made.
        await fixture.peripheral.transmitRoomFreed(100)
        let sim = SimulatedBackend(
            chips: [
                SimulatedChipConfig(
                    label: "slowdisk",
                    lines: [
                        // An edge every 150 ms; pulses at 40 a second.
                        SimulatedLineConfig(name: "DOOR", generator: .square(period: .milliseconds(300), duty: 0.5)),
                        SimulatedLineConfig(name: "METER", generator: .pulses(perSecond: 40, width: .milliseconds(2)))
                    ])
            ], clock: .realTime)
        let door = try SensorRunner(
            spec: SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOOR"))), backend: sim,
            stateWriter: writer)
        // A report every 50 ms, each a write of 200 ms: the writer always has one waiting.
        let water = try SensorRunner(
            spec: SensorSpec(
                name: "water",
                kind: CounterSettings(
                    line: LineSelector("METER"), stateDirectory: state, reportInterval: .milliseconds(50))),
            backend: sim, stateWriter: writer)
        let observed = Observations()
        let link = fixture.link
        let pipeline = fixture.pipeline
        let peripheral = fixture.peripheral
        let doorTask = Task(executorPreference: EventLoop.shared) {
            try await door.run { sample in
                let latency = EventLoop.now().nanoseconds - sample.timestampNs
                pipeline.onLoop(with: sample) { $0.sensorValue($1) }
                let sent = link.takeWithTimes(alice).filter { $0.pdu.first == 0x1B }
                // Sent on air: the link takes the next ones.
                peripheral.onLoop(with: sent.count) { $0.updatesDelivered($1, to: alice) }
                observed.seen.withLock {
                    $0.door.append((sample.timestampNs, latency))
                    $0.notified += sent.map(\.sentNs)
                }
            }
        }
        let countFile = state + "/water.count"
        let waterTask = Task(executorPreference: EventLoop.shared) {
            try await water.run { sample in
                guard let total = sample.number else { return }
                let saved = (try? StateFile.readValue(countFile)).map { $0.flatMap(Double.init) ?? 0 } ?? -1
                observed.seen.withLock { $0.counter.append((total, saved)) }
            }
        }
        // Six seconds, about 40 edges. In a CI run on two loaded cores, ten edges in a row came
        // late, the first by 1.5 s: the loop had not run for that long, with the disk or without
        // it. In three seconds that was half the edges, and it moved the median. A loop that
        // waited for the writer would delay nearly every edge, however long the test runs.
        try await Task.sleep(for: .seconds(6))
        doorTask.cancel()
        waterTask.cancel()
        try await doorTask.value
        try await waterTask.value
        await fixture.finish()
        let last = link.takeWithTimes(alice).filter { $0.pdu.first == 0x1B }.map(\.sentNs)
        observed.seen.withLock { $0.notified += last }

        let seen = observed.seen.withLock { $0 }
        // The first value is the line's level at the start, not an edge.
        let edges = seen.door.dropFirst()
        #expect(edges.count >= 30, "\(edges.count) door edges in 6 s")
        // The median, not each one: beside other suites a loaded machine delays a few edges
        // whatever the disk does, while a loop that waited for the writer would delay nearly all
        // of them by up to 200 ms.
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let latencies = edges.map { Double($0.latencyNs) / 1e6 }
        #expect(median(latencies) < 10, "door edges delivered this long after the edge (ms): \(latencies)")
        // Each notification (the first: the line's level at the start) after the edge that made it,
        // within milliseconds.
        #expect(seen.notified.count >= edges.count, "\(seen.notified.count) notifications for \(edges.count) edges")
        let notificationDelays = seen.notified.map { sent in
            Double(sent - (seen.door.last { $0.edgeNs <= sent }?.edgeNs ?? 0)) / 1e6
        }
        #expect(median(notificationDelays) < 10, "notified this long after the edge (ms): \(notificationDelays)")
        // Saves of 200 ms in 6 s: about 29 reports, each of a total already on disk.
        #expect(seen.counter.count >= 16, "\(seen.counter.count) counter totals reported")
        let ahead = seen.counter.filter { $0.reported > $0.saved }
        #expect(ahead.isEmpty, "totals reported before they were saved (reported, saved): \(ahead)")
        #expect((seen.counter.last?.reported ?? 0) >= 200, "\(seen.counter.last?.reported ?? 0) pulses counted")
    }
}
