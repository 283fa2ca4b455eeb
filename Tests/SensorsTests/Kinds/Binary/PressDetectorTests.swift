import GPIO
import StateFile
import TestHarness
import Testing

@testable import Sensors

/// Single, double and long presses told apart from level changes and time, as the sensor core
/// drives the detector: a deadline that has passed is ticked before a later change.
struct PressDetectorTests {
    /// A level change: pressed (true) or released, at a time in milliseconds.
    struct Change {
        let active: Bool
        let ms: UInt64
    }

    static func down(_ ms: UInt64) -> Change { Change(active: true, ms: ms) }
    static func up(_ ms: UInt64) -> Change { Change(active: false, ms: ms) }

    /// The events and when (ms) they were told, running until `end` ms.
    static func run(
        _ changes: [Change], settings: PressSettings = PressSettings(), startActive: Bool = false, end: UInt64 = 10_000
    ) -> [String] {
        var detector = PressDetector(settings)
        detector.start(active: startActive)
        var told: [String] = []
        func tick(before time: UInt64) {
            while let due = detector.deadline, due < time {
                if let event = detector.tick(at: due) { told.append("\(event.eventType)@\(due / 1_000_000)") }
            }
        }
        for change in changes {
            let time = change.ms * 1_000_000
            tick(before: time)
            if let event = detector.change(active: change.active, at: time) {
                told.append("\(event.eventType)@\(change.ms)")
            }
        }
        tick(before: end * 1_000_000)
        return told
    }

    static let defaults = PressSettings(doublePressWindow: .milliseconds(300), longPressTime: .milliseconds(800))

    @Test(arguments: [
        // A short press: single, a window after its release.
        ([down(1000), up(1100)], ["single_press@1400"]),
        // Two within the window: double, at the second press.
        ([down(1000), up(1100), down(1300), up(1400)], ["double_press@1300"]),
        // The second press just too late: two singles.
        ([down(1000), up(1100), down(1401), up(1500)], ["single_press@1400", "single_press@1800"]),
        // Held 800 ms: long at once, its release tells nothing more.
        ([down(1000), up(3000)], ["long_press@1800"]),
        // Released just before the long press time: a single.
        ([down(1000), up(1799)], ["single_press@2099"]),
        // A long press, then a short one: the release of the long does not start a double.
        ([down(1000), up(2000), down(2100), up(2200)], ["long_press@1800", "single_press@2500"]),
        // Three quick presses: a double, then a single starting over.
        ([down(1000), up(1100), down(1200), up(1300), down(1400), up(1500)], ["double_press@1200", "single_press@1800"]),
        // Four: two doubles.
        (
            [down(1000), up(1100), down(1200), up(1300), down(1400), up(1500), down(1600), up(1700)],
            ["double_press@1200", "double_press@1600"]
        ),
        // The second press of a double held long: still a double, no long press.
        ([down(1000), up(1100), down(1200), up(3000)], ["double_press@1200"]),
        // Repeated levels (events lost between them) change nothing.
        ([down(1000), down(1050), up(1100), up(1150)], ["single_press@1400"]),
        // Pressed and not yet released at the end: nothing until the long press time.
        ([down(9500)], [])
    ])
    func pressesAreToldApart(changes: [Change], expected: [String]) {
        #expect(Self.run(changes, settings: Self.defaults) == expected)
    }

    @Test func withoutADoublePressWindowASinglePressIsToldAtItsRelease() {
        let settings = PressSettings(doublePressWindow: .zero, longPressTime: .milliseconds(500))
        #expect(settings.events == [.single, .long])
        #expect(
            Self.run([Self.down(1000), Self.up(1100), Self.down(1200), Self.up(1300), Self.down(2000), Self.up(2600)], settings: settings)
                == ["single_press@1100", "single_press@1300", "long_press@2500"])
    }

    @Test func aButtonHeldWhenReadingStartsIsNoPress() {
        #expect(Self.run([Self.up(5000)], startActive: true).isEmpty)
        #expect(Self.run([Self.up(5000), Self.down(6000), Self.up(6100)], startActive: true) == ["single_press@6400"])
    }

    @Test func theCodesAreBTHomesButtonEvents() {
        // https://bthome.io/format/: 0x01 press, 0x02 double press, 0x04 long press.
        #expect(PressEvent.allCases.map(\.rawValue) == [0x01, 0x02, 0x04])
    }

    /// Through the sensor: a bouncing contact (debounced on the line) makes one press per press,
    /// on the `press` channel beside the `value` channel's level, unfiltered by value filters.
    @Test func aBouncingButtonPressesOncePerPress() throws {
        let bounce: [SignalGenerator.Step] = [
            .init(true, .milliseconds(2)), .init(false, .milliseconds(1)), .init(true, .milliseconds(1))
        ]
        let button = SimulatedLineConfig(
            name: "BTN",
            generator: .steps(
                [.init(false, .seconds(1))] + bounce + [.init(true, .milliseconds(100)), .init(false, .seconds(1))]
                    + bounce + [.init(true, .milliseconds(50)), .init(false, .milliseconds(100))] + bounce
                    + [.init(true, .milliseconds(50)), .init(false, .seconds(1))]
                    + bounce + [.init(true, .seconds(2)), .init(false, .seconds(10))],
                repeats: false))
        let spec = SensorSpec(
            name: "button",
            kind: BinarySettings(line: LineSelector("BTN"), press: Self.defaults),
            filters: [.debounce(.milliseconds(10)), .scale(10)])
        let sim = SimulatedBackend(chips: [SimulatedChipConfig(label: "sensors", lines: [button])], startNs: 0)
        let driver = try SimulatedSensorDriver(backend: sim, sensors: [spec], stateWriter: StateFileWriter())
        let values = try driver.start() + driver.run(for: .seconds(8))
        let presses = values.filter { $0.channel == SensorSample.pressChannel }
        #expect(presses.map(\.number) == [1, 2, 4])
        #expect(values.filter { $0.channel == "value" }.map(\.bool) == [false, true, false, true, false, true, false, true, false])
    }
}
