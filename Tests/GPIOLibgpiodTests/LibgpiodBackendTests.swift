import EventLoop
import Foundation
import GPIO
import TestHarness
import Testing

@testable import GPIOLibgpiod

/// The gpio-sim chip the VM harness creates: label `gattway-sim`, lines `SIM0`…`SIM7`.
/// Inputs are driven by writing `pull-up`/`pull-down` to `$GATTWAY_GPIOSIM_SYSFS/sim_gpio<k>/pull`;
/// outputs are observed in `…/sim_gpio<k>/value`.
enum GPIOSim {
    static let chip = ProcessInfo.processInfo.environment["GATTWAY_GPIOSIM_CHIP"]
    static let sysfs = ProcessInfo.processInfo.environment["GATTWAY_GPIOSIM_SYSFS"]
    static var available: Bool { chip != nil && sysfs != nil }
    static let label = "gattway-sim"

    static func drive(_ offset: Int, high: Bool) throws {
        try (high ? "pull-up" : "pull-down").write(
            toFile: "\(sysfs!)/sim_gpio\(offset)/pull",
            atomically: false, encoding: .utf8)
    }

    static func level(_ offset: Int) throws -> Bool {
        try String(contentsOfFile: "\(sysfs!)/sim_gpio\(offset)/value", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines) == "1"
    }
}

@Suite(
    .enabled(if: GPIOSim.available, "needs a gpio-sim chip: set by the VM harness (GATTWAY_GPIOSIM_CHIP)"),
    .serialized)
struct LibgpiodBackendTests {
    let backend = LibgpiodBackend()

    func selector(_ offset: Int) -> LineSelector { LineSelector("SIM\(offset)", chip: GPIOSim.label) }

    @Test func findsTheSimulatedChipAndItsLinesByName() throws {
        let chip = try #require(try backend.chips().first { $0.label == GPIOSim.label })
        #expect(chip.path == GPIOSim.chip)
        #expect(chip.lines.map(\.name) == (0..<8).map { "SIM\($0)" })
        #expect(try backend.resolve(LineSelector("SIM5", chip: GPIOSim.chip!)).offset == 5)
        #expect(try backend.resolve(LineSelector("SIM5", chip: chip.name)).offset == 5)
        #expect(throws: GPIOError.lineNotFound(LineSelector("SIM9", chip: GPIOSim.label), closest: ["SIM0", "SIM1", "SIM2"])) {
            try backend.resolve(LineSelector("SIM9", chip: GPIOSim.label))
        }
        #expect([1, 2].contains(LibgpiodBackend.apiMajor))
    }

    @Test func biasSetsTheLevelOfAnUndrivenInput() throws {
        let up = try backend.requestInput(
            selector(1), consumer: "gattway-test", settings: InputSettings(bias: .pullUp),
            onReadable: {})
        #expect(try up.value())
        up.release()
        let down = try backend.requestInput(
            selector(1), consumer: "gattway-test", settings: InputSettings(bias: .pullDown),
            onReadable: {})
        #expect(try !down.value())
        down.release()
    }

    @Test func aBusyLineNamesItsConsumer() throws {
        let holder = try backend.requestInput(
            selector(3), consumer: "gattway-holder", settings: InputSettings(),
            onReadable: {})
        let error = #expect(throws: GPIOError.self) {
            try backend.requestOutput(selector(3), consumer: "gattway-test", settings: OutputSettings())
        }
        #expect(error?.description.contains("\"gattway-holder\"") == true)
        holder.release()
        try backend.requestOutput(selector(3), consumer: "gattway-test", settings: OutputSettings()).release()
    }

    @Test func edgesArriveWithMonotonicTimestampsAndSequence() async throws {
        try GPIOSim.drive(2, high: false)
        let signal = ReadableSignal()
        let input = try backend.requestInput(
            selector(2), consumer: "gattway-test",
            settings: InputSettings(edges: .both), onReadable: signal.callback)
        defer { input.release() }
        let before = EventLoop.now().nanoseconds
        try GPIOSim.drive(2, high: true)
        #expect(await signal.wait())
        let rising = try input.readEvents()
        try GPIOSim.drive(2, high: false)
        #expect(await signal.wait())
        let falling = try input.readEvents()
        let after = EventLoop.now().nanoseconds
        #expect(rising.events.map(\.edge) == [.rising])
        #expect(falling.events.map(\.edge) == [.falling])
        let stamps = (rising.events + falling.events).map(\.timestampNs)
        #expect(stamps.allSatisfy { (before...after).contains($0) })
        #expect(stamps == stamps.sorted())
        #expect(falling.events.first?.sequence == (rising.events.first?.sequence).map { $0 + 1 })
        #expect(rising.lost == 0 && falling.lost == 0)
    }

    @Test func debounceSwallowsBounces() async throws {
        try GPIOSim.drive(4, high: false)
        let signal = ReadableSignal()
        let input = try backend.requestInput(
            selector(4), consumer: "gattway-test",
            settings: InputSettings(edges: .both, debounce: .milliseconds(300)),
            onReadable: signal.callback)
        defer { input.release() }
        for high in [true, false, true, false, true] { try GPIOSim.drive(4, high: high) }
        let settled = EventLoop.now().nanoseconds
        #expect(await signal.wait())
        let batch = try input.readEvents()
        #expect(batch.events.map(\.edge) == [.rising])
        #expect(batch.events.first.map { $0.timestampNs >= settled } == true)
        #expect(try input.value())
    }

    /// One reconfiguration of the same request on libgpiod v2; a release and a new request on v1.
    @Test func anOutputSwitchedToAnInputReportsEdges() async throws {
        try GPIOSim.drive(5, high: false)
        let output = try backend.requestOutput(
            selector(5), consumer: "gattway-test",
            settings: OutputSettings(initialValue: false, eventBufferSize: 32))
        let signal = ReadableSignal()
        let input = try output.switchToInput(bias: .asIs, edges: .both, debounce: .zero, onReadable: signal.callback)
        defer { input.release() }
        #expect(throws: GPIOError.released("SIM5")) { try output.set(true) }
        output.release()  // no longer the owner: the line stays with the input
        let line = try #require(try backend.chips().first { $0.label == GPIOSim.label }?.lines[5])
        #expect(line.used && line.consumer == "gattway-test" && line.direction == .input)
        #expect(try !input.value())
        try GPIOSim.drive(5, high: true)
        #expect(await signal.wait())
        let batch = try input.readEvents()
        #expect(batch.events.map(\.edge) == [.rising] && batch.lost == 0)
        #expect(try input.value())
    }

    @Test func outputsStartAtTheirInitialValueAndAreReleased() throws {
        let output = try backend.requestOutput(
            selector(6), consumer: "gattway-test",
            settings: OutputSettings(initialValue: true))
        #expect(try GPIOSim.level(6))
        try output.set(false)
        #expect(try !GPIOSim.level(6))
        #expect(try !output.value())
        output.release()
        let line = try #require(try backend.chips().first { $0.label == GPIOSim.label }?.lines[6])
        #expect(!line.used)
    }
}
