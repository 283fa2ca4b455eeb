import EventLoop
import Foundation
import TestHarness
import Testing

@testable import GPIO

/// Behaviour of the simulated backend on its virtual clock: the same behaviours
/// `LibgpiodBackendTests` checks against the kernel's gpio-sim.
@Suite struct SimulatedBackendTests {
    static let start: UInt64 = 1_000_000_000

    func backend(_ lines: [SimulatedLineConfig]) -> SimulatedBackend {
        SimulatedBackend(chips: [SimulatedChipConfig(label: "sim-test", lines: lines)], startNs: Self.start)
    }

    func line(_ name: String, _ generator: SignalGenerator? = nil) -> SimulatedLineConfig {
        SimulatedLineConfig(name: name, generator: generator)
    }

    @Test func chipsListNamedLinesAndWhoHoldsThem() throws {
        let sim = backend([line("SIM0"), line("SIM1")])
        let held = try sim.requestOutput(LineSelector("SIM1"), consumer: "tester", settings: OutputSettings())
        let chips = try sim.chips()
        #expect(chips.map(\.path) == ["sim:sim-test"])
        #expect(chips[0].lines.map(\.name) == ["SIM0", "SIM1"])
        #expect(chips[0].lines[1].consumer == "tester")
        #expect(chips[0].lines[1].direction == .output)
        #expect(!chips[0].lines[0].used)
        held.release()
    }

    @Test func linesAreFoundByNameOptionallyOnAChip() throws {
        let sim = backend([line("GPIO17"), line("GPIO27")])
        #expect(try sim.resolve(LineSelector("GPIO27")).offset == 1)
        #expect(try sim.resolve(LineSelector("GPIO27", chip: "sim-test")).offset == 1)
        #expect(try sim.resolve(LineSelector("GPIO27", chip: "sim:sim-test")).offset == 1)
        #expect(throws: GPIOError.chipNotFound("pinctrl-rp1", available: ["sim-test [sim-test]"])) {
            try sim.resolve(LineSelector("GPIO27", chip: "pinctrl-rp1"))
        }
    }

    @Test func aMissingLineNamesTheClosestOnes() throws {
        let sim = backend([line("GPIO17"), line("GPIO27"), line("ID_SDA")])
        let error = #expect(throws: GPIOError.self) { try sim.resolve(LineSelector("GPIO71")) }
        guard case .lineNotFound(_, let closest) = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(closest == ["GPIO17", "GPIO27"])
        #expect(error!.description.contains("closest names: GPIO17, GPIO27"))
    }

    @Test func aBusyLineNamesItsConsumer() throws {
        let sim = backend([line("SIM0")])
        let first = try sim.requestInput(
            LineSelector("SIM0"), consumer: "gattway:door", settings: InputSettings(),
            onReadable: {})
        let error = #expect(throws: GPIOError.self) {
            try sim.requestOutput(LineSelector("SIM0"), consumer: "other", settings: OutputSettings())
        }
        #expect(error?.description.contains("held by consumer \"gattway:door\"") == true)
        first.release()
        // Released cleanly: the line can be requested again.
        _ = try sim.requestOutput(LineSelector("SIM0"), consumer: "other", settings: OutputSettings())
    }

    @Test func biasDecidesAFloatingLinesLevel() throws {
        let sim = backend([line("SIM0")])
        let up = try sim.requestInput(
            LineSelector("SIM0"), consumer: "t", settings: InputSettings(bias: .pullUp),
            onReadable: {})
        #expect(try up.value())
        up.release()
        let down = try sim.requestInput(
            LineSelector("SIM0"), consumer: "t", settings: InputSettings(bias: .pullDown),
            onReadable: {})
        #expect(try !down.value())
    }

    @Test func edgesCarryTimestampsAndSequenceNumbers() throws {
        let sim = backend([line("SIM0", .square(period: .milliseconds(1), duty: 0.25))])
        let signals = CallCounter()
        let input = try sim.requestInput(
            LineSelector("SIM0"), consumer: "t", settings: InputSettings(edges: .both),
            onReadable: { signals.increment() })
        sim.advance(by: .microseconds(2_100))
        let batch = try input.readEvents()
        let ms: UInt64 = 1_000_000
        #expect(
            batch.events == [
                EdgeEvent(edge: .falling, timestampNs: Self.start + ms / 4, sequence: 1),
                EdgeEvent(edge: .rising, timestampNs: Self.start + ms, sequence: 2),
                EdgeEvent(edge: .falling, timestampNs: Self.start + ms + ms / 4, sequence: 3),
                EdgeEvent(edge: .rising, timestampNs: Self.start + 2 * ms, sequence: 4)
            ])
        #expect(batch.lost == 0)
        #expect(signals.value == 1)
        #expect(try input.readEvents().events.isEmpty)
    }

    @Test func edgeSelectionAndActiveLowApplyToLogicalLevels() throws {
        let sim = backend([line("SIM0", .square(period: .milliseconds(1), duty: 0.5))])
        let input = try sim.requestInput(
            LineSelector("SIM0"), consumer: "t",
            settings: InputSettings(activeLow: true, edges: .rising), onReadable: {})
        #expect(try !input.value())  // physically high at the start
        sim.advance(by: .microseconds(1_600))
        // Physical falls at 0.5 ms and 1.5 ms are logical rises.
        #expect(try input.readEvents().events.map(\.timestampNs) == [Self.start + 500_000, Self.start + 1_500_000])
    }

    @Test func debounceReportsOneEdgeOnceTheLevelHeld() throws {
        // A contact that bounces for 0.3 ms before closing, then stays closed.
        let bouncing: [SignalGenerator.Step] = [
            .init(false, .milliseconds(1)), .init(true, .microseconds(100)), .init(false, .microseconds(50)),
            .init(true, .microseconds(100)), .init(false, .microseconds(50)), .init(true, .seconds(10))
        ]
        let sim = backend([line("SIM0", .steps(bouncing, repeats: false))])
        let input = try sim.requestInput(
            LineSelector("SIM0"), consumer: "t",
            settings: InputSettings(edges: .both, debounce: .microseconds(200)),
            onReadable: {})
        sim.advance(by: .milliseconds(5))
        let settled = Self.start + 1_000_000 + 300_000
        #expect(try input.readEvents().events == [EdgeEvent(edge: .rising, timestampNs: settled + 200_000, sequence: 1)])
        #expect(try input.value())
    }

    @Test func anOverflowingBufferIsCountedAsLostEvents() throws {
        let sim = backend([line("SIM0", .pulses(perSecond: 10_000, width: .microseconds(10)))])
        let input = try sim.requestInput(
            LineSelector("SIM0"), consumer: "t",
            settings: InputSettings(edges: .rising, eventBufferSize: 16), onReadable: {})
        sim.advance(by: .microseconds(9_950))  // rises at 0.1 ms … 9.9 ms: 99 events
        let batch = try input.readEvents()
        #expect(batch.events.count == 16)
        #expect(batch.lost == 83)
        #expect(batch.events.first?.sequence == 84)
        #expect(input.lostEvents == 83)
    }

    @Test func outputsStartAtTheirInitialValueAndAreObservable() throws {
        let sim = backend([line("LED")])
        let led = try sim.requestOutput(LineSelector("LED"), consumer: "t", settings: OutputSettings(initialValue: true))
        #expect(try sim.level(of: LineSelector("LED")))
        try led.set(false)
        #expect(try !sim.level(of: LineSelector("LED")))
        #expect(try !led.value())
        led.release()
        #expect(throws: GPIOError.released("LED")) { try led.set(true) }
        #expect(try sim.chips()[0].lines[0].used == false)
    }

    @Test func activeLowOutputsDriveTheInverseLevel() throws {
        let sim = backend([line("RELAY")])
        let relay = try sim.requestOutput(
            LineSelector("RELAY"), consumer: "t",
            settings: OutputSettings(activeLow: true, initialValue: true))
        #expect(try !sim.level(of: LineSelector("RELAY")))
        relay.release()
    }

    @Test func anOutputSwitchedToAnInputSeesTheVeryNextEdge() throws {
        // The generator keeps running under the output: low from 0.5 ms, high again at 1 ms.
        let sim = backend([line("SIM0", .square(period: .milliseconds(1), duty: 0.5))])
        let output = try sim.requestOutput(
            LineSelector("SIM0"), consumer: "gattway:t",
            settings: OutputSettings(initialValue: true, eventBufferSize: 8))
        sim.advance(by: .microseconds(999))
        let input = try output.switchToInput(bias: .asIs, edges: .both, debounce: .zero, onReadable: {})
        #expect(try !input.value())
        sim.advance(by: .microseconds(2))
        #expect(
            try input.readEvents()
                == EdgeEventBatch(events: [
                    EdgeEvent(edge: .rising, timestampNs: Self.start + 1_000_000, sequence: 1)
                ]))
        let info = try sim.chips()[0].lines[0]
        #expect(info.direction == .input && info.consumer == "gattway:t")
        // The output handle no longer owns the line; the input does.
        #expect(throws: GPIOError.released("SIM0")) { try output.set(true) }
        output.release()
        #expect(try sim.chips()[0].lines[0].used)
        input.release()
        #expect(try !sim.chips()[0].lines[0].used)
    }

    @Test func aDHTAnswerToTheSwitchReachesTheInputWhole() throws {
        let sim = backend([line("DHT", .dht22(humidity: 48, temperature: 21.5))])
        let output = try sim.requestOutput(
            LineSelector("DHT"), consumer: "t",
            settings: OutputSettings(initialValue: false, eventBufferSize: 256))
        sim.advance(by: .microseconds(1_100))
        let switched = sim.now()
        let input = try output.switchToInput(bias: .pullUp, edges: .both, debounce: .zero, onReadable: {})
        sim.advance(by: .milliseconds(10))
        let batch = try input.readEvents()
        // The sensor pulls low 30 µs after the release; every edge of the frame follows.
        #expect(batch.events.count == 84 && batch.lost == 0)
        #expect(batch.events.first == EdgeEvent(edge: .falling, timestampNs: switched + 30_000, sequence: 1))
        #expect(batch.events.map(\.sequence) == Array(1...84))
    }

    @Test func theSwitchedInputKeepsActiveLowAndTheReservedBuffer() throws {
        let sim = backend([line("SIM0", .pulses(perSecond: 10_000, width: .microseconds(10)))])
        let output = try sim.requestOutput(
            LineSelector("SIM0"), consumer: "t",
            settings: OutputSettings(activeLow: true, eventBufferSize: 4))
        let input = try output.switchToInput(bias: .asIs, edges: .rising, debounce: .zero, onReadable: {})
        sim.advance(by: .microseconds(950))  // physical falls (logical rises) at 0.01 … 0.91 ms: 10
        let batch = try input.readEvents()
        #expect(batch.events.map(\.timestampNs) == [610_000, 710_000, 810_000, 910_000].map { Self.start + $0 })
        #expect(batch.lost == 6)
    }

    @Test func aReleasedOutputCannotBeSwitched() throws {
        let sim = backend([line("SIM0")])
        let output = try sim.requestOutput(LineSelector("SIM0"), consumer: "t", settings: OutputSettings())
        output.release()
        #expect(throws: GPIOError.released("SIM0")) {
            try output.switchToInput(bias: .asIs, edges: .both, debounce: .zero, onReadable: {})
        }
    }

    @Test func stepsRepeatAndPulsesKeepTheirRate() throws {
        let sim = backend([
            line("STEPS", .steps([.init(true, .milliseconds(2)), .init(false, .milliseconds(3))], repeats: true)),
            line("PULSES", .pulses(perSecond: 3, width: .milliseconds(10)))
        ])
        let steps = try sim.requestInput(LineSelector("STEPS"), consumer: "t", settings: InputSettings(edges: .both), onReadable: {})
        let pulses = try sim.requestInput(LineSelector("PULSES"), consumer: "t", settings: InputSettings(edges: .rising), onReadable: {})
        sim.advance(by: .milliseconds(11))
        #expect(
            try steps.readEvents().events.map { $0.timestampNs - Self.start }
                == [2_000_000, 5_000_000, 7_000_000, 10_000_000])
        sim.advance(by: .milliseconds(9_990))
        // 1/3 s apart without drift over 10 s: rises at 1/3 s … 10 s.
        let rises = try pulses.readEvents().events.map(\.timestampNs)
        #expect(rises.count == 30)
        #expect(rises.last == Self.start + 10_000_000_000)
    }
}

/// A thread-safe count of callbacks.
final class CallCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// The real-time clock `gattway demo` uses: the simulator's timer generates edges as they fall
/// due and signals them; the test waits for that signal, not for a fixed time.
@Suite struct SimulatedRealTimeTests {
    @Test func edgesArriveOnTheMonotonicClock() async throws {
        let sim = SimulatedBackend(
            chips: [
                SimulatedChipConfig(
                    label: "rt",
                    lines: [
                        SimulatedLineConfig(name: "PULSES", generator: .pulses(perSecond: 1_000, width: .microseconds(100)))
                    ])
            ],
            clock: .realTime)
        let (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let input = try sim.requestInput(
            LineSelector("PULSES"), consumer: "t", settings: InputSettings(edges: .rising),
            onReadable: { signal.yield() })
        var iterator = signals.makeAsyncIterator()
        _ = await iterator.next()
        let batch = try input.readEvents()
        let now = EventLoop.now().nanoseconds
        #expect(!batch.events.isEmpty)
        #expect(batch.events.allSatisfy { $0.timestampNs <= now && ($0.timestampNs - sim.originNs) % 1_000_000 == 0 })
    }

    /// However late the switch runs after the start signal (a loaded machine), the answer to it
    /// arrives whole: the output is let go and the input is in place in the same instant.
    @Test func aDHTAnswerToTheSwitchArrivesWholeInRealTime() async throws {
        let sim = SimulatedBackend(
            chips: [
                SimulatedChipConfig(
                    label: "rt",
                    lines: [
                        SimulatedLineConfig(name: "DHT", generator: .dht22(humidity: 48, temperature: 21.5))
                    ])
            ],
            clock: .realTime)
        let output = try sim.requestOutput(
            LineSelector("DHT"), consumer: "t",
            settings: OutputSettings(initialValue: false, eventBufferSize: 256))
        try await Task.sleep(for: .milliseconds(2))  // the start signal
        let signal = ReadableSignal()
        let input = try output.switchToInput(
            bias: .pullUp, edges: .both, debounce: .zero,
            onReadable: signal.callback)
        var events: [EdgeEvent] = []
        var lost = 0
        while events.count < 84, await signal.wait() {
            let batch = try input.readEvents()
            events += batch.events
            lost += batch.lost
        }
        #expect(events.count == 84 && lost == 0)
        #expect(events.first?.edge == .falling && events.last?.edge == .rising)
    }
}

/// A line driven through its socket by another program (`SignalGenerator.socket`).
@Suite struct SimulatedSocketLineTests {
    func socketLine(_ path: String) -> SimulatedBackend {
        SimulatedBackend(
            chips: [
                SimulatedChipConfig(label: "rt", lines: [SimulatedLineConfig(name: "DOOR", generator: .socket(path: path))])
            ],
            clock: .realTime)
    }

    func send(_ text: String, to path: String) throws {
        let sender = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(sender) }
        let sent = UnixSocketAddress.with(path) { target, length in
            Array(text.utf8).withUnsafeBytes { sendto(sender, $0.baseAddress, $0.count, 0, target, length) }
        }
        #expect(sent == text.utf8.count, "sendto \(path): \(String(cString: strerror(errno)))")
    }

    func events(_ input: any InputLine, _ signal: ReadableSignal, count: Int) async throws -> [Edge] {
        var edges: [Edge] = []
        while edges.count < count, await signal.wait() {
            edges += try input.readEvents().events.map(\.edge)
        }
        return edges
    }

    @Test func datagramsSetTheLevelInOrderAndOnlyChangesAreEdges() async throws {
        let path = try temporaryDirectory("socket-line").path + "/door.socket"
        let sim = socketLine(path)
        let signal = ReadableSignal()
        let input = try sim.requestInput(
            LineSelector("DOOR"), consumer: "t", settings: InputSettings(edges: .both), onReadable: signal.callback)
        #expect(try input.value() == false)
        try send("1", to: path)
        #expect(try await events(input, signal, count: 1) == [.rising])
        try send("1", to: path)  // no change, no edge
        try send("0 1\n0", to: path)  // one datagram, three levels in order; other bytes ignored
        #expect(try await events(input, signal, count: 3) == [.falling, .rising, .falling])
        #expect(try input.value() == false)
    }

    /// A debounced line signals its edge once the level has held for the period, with no other
    /// datagram, read or timer to wake the simulator; a bounce shorter than the period is no edge.
    @Test func aDebouncedLineSignalsItsEdgeWhenTheLevelHasHeld() async throws {
        let path = try temporaryDirectory("socket-line").path + "/door.socket"
        let sim = socketLine(path)
        let signal = ReadableSignal()
        let input = try sim.requestInput(
            LineSelector("DOOR"), consumer: "t", settings: InputSettings(edges: .both, debounce: .milliseconds(20)),
            onReadable: signal.callback)
        try send("101", to: path)
        let edges = try await events(input, signal, count: 1)
        #expect(edges == [.rising])
        let held = try input.readEvents()
        #expect(held.events.isEmpty && held.lost == 0)
    }

    @Test func theSocketExistsWhileAnInputHoldsTheLine() throws {
        let path = try temporaryDirectory("socket-line").path + "/door.socket"
        let sim = socketLine(path)
        #expect(access(path, F_OK) != 0)
        let input = try sim.requestInput(LineSelector("DOOR"), consumer: "t", settings: InputSettings(), onReadable: {})
        #expect(access(path, F_OK) == 0)
        input.release()
        #expect(access(path, F_OK) != 0)
        // Requested again at once, it binds again.
        let again = try sim.requestInput(LineSelector("DOOR"), consumer: "t", settings: InputSettings(), onReadable: {})
        #expect(access(path, F_OK) == 0)
        again.release()
    }

    /// The watched socket reaches the backend strongly until the line is released: then nothing
    /// keeps either.
    @Test func aReleasedSocketLineKeepsNoBackend() async throws {
        let path = try temporaryDirectory("socket-line").path + "/door.socket"
        weak var released: SimulatedBackend?
        do {
            let sim = socketLine(path)
            released = sim
            let input = try sim.requestInput(
                LineSelector("DOOR"), consumer: "t", settings: InputSettings(), onReadable: {})
            input.release()
        }
        // The socket is unwatched on the loop's next turn.
        #expect(await eventually { released == nil })
    }

    @Test func aSocketThatCannotBeBoundIsAnErrorNamingThePath() throws {
        let sim = socketLine("/nonexistent-directory/door.socket")
        #expect {
            try sim.requestInput(LineSelector("DOOR"), consumer: "t", settings: InputSettings(), onReadable: {})
        } throws: { error in
            "\(error)" == "binding the simulated line socket /nonexistent-directory/door.socket failed: "
                + "No such file or directory (errno 2)"
        }
    }
}
