import Sensors
import Testing

@testable import Gateway

/// The confirm button counts a press only from a seen release, so a button held (or a line
/// stuck active) at start, or after a failed reading, confirms nothing.
struct ConfirmButtonTests {
    static func level(_ pressed: Bool) -> SensorSample {
        SensorSample(sensor: "pair", channel: "value", reading: .bool(pressed), timestampNs: 0)
    }

    static let failed = SensorSample(sensor: "pair", channel: "value", reading: .failure(.timeout), timestampNs: 0)
    static let lostEvents = SensorSample(sensor: "pair", channel: "lost_events", reading: .number(3), timestampNs: 0)

    @Test func onlyAReleaseThenPressCounts() {
        var button = ConfirmButton()
        let sequence: [(SensorSample, Bool)] = [
            (Self.level(true), false),  // held at start
            (Self.level(true), false),
            (Self.level(false), false),
            (Self.lostEvents, false),  // not the button's level
            (Self.level(true), true),  // a press
            (Self.level(true), false),  // still held
            (Self.level(false), false),
            (Self.failed, false),
            (Self.level(true), false),  // after a failure: not seen released
            (Self.level(false), false),
            (Self.level(true), true)
        ]
        for (step, (value, press)) in sequence.enumerated() {
            #expect(button.isPress(value) == press, "step \(step)")
        }
    }
}
