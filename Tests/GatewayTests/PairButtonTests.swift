import Sensors
import Testing

@testable import Gateway

/// `bluetooth.security.pair_with`: a long press (held at least `pair_press`, then released)
/// opens the pairing window; a short press, a button held since the start or through a failed
/// reading does not.
@Suite struct PairButtonTests {
    static func sample(_ pressed: Bool, atSeconds seconds: Double) -> SensorSample {
        SensorSample(
            sensor: "pair", channel: "value", reading: .bool(pressed), timestampNs: UInt64(seconds * 1e9))
    }

    static let failed = SensorSample(sensor: "pair", channel: "value", reading: .failure(.timeout), timestampNs: 0)

    /// What each sample of `script` gives, in order.
    static func presses(_ script: [SensorSample]) -> [Bool] {
        var button = PairButton(hold: .seconds(3))
        return script.map { button.isLongPress($0) }
    }

    @Test func aPressHeldLongEnoughOpensTheWindowOnRelease() {
        #expect(
            Self.presses([
                Self.sample(false, atSeconds: 0), Self.sample(true, atSeconds: 1), Self.sample(true, atSeconds: 2),
                Self.sample(false, atSeconds: 4)
            ]) == [false, false, false, true], "held 3 s (a repeated reading does not restart it)")
        #expect(
            Self.presses([Self.sample(false, atSeconds: 0), Self.sample(true, atSeconds: 1), Self.sample(false, atSeconds: 3.9)])
                == [false, false, false], "2.9 s is too short")
    }

    @Test func aButtonHeldAtTheStartOrThroughAFailureDoesNotCount() {
        #expect(
            Self.presses([Self.sample(true, atSeconds: 0), Self.sample(false, atSeconds: 10)]) == [false, false],
            "held since the start: never seen released")
        #expect(
            Self.presses([
                Self.sample(false, atSeconds: 0), Self.sample(true, atSeconds: 1), Self.failed,
                Self.sample(true, atSeconds: 5), Self.sample(false, atSeconds: 9)
            ]) == [false, false, false, false, false], "a failed reading in between")
        #expect(
            Self.presses([
                Self.sample(false, atSeconds: 0), Self.sample(true, atSeconds: 1), Self.sample(false, atSeconds: 5),
                Self.sample(true, atSeconds: 6), Self.sample(false, atSeconds: 9.5)
            ]) == [false, false, true, false, true], "each long press counts")
    }
}
