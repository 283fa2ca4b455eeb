import Config
import Sensors

/// The `bluetooth.security.pair_with` sensor as a button: holding it pressed (true) for at least
/// `hold` and releasing it is a long press, which opens the pairing window. Time is the samples'
/// own monotonic timestamps. As with `ConfirmButton`, a button already held at the start, or one
/// whose reading failed in between, counts only after it has been seen released, so a stuck or
/// miswired line never opens the window.
struct PairButton {
    let hold: Duration
    private var released = false
    /// When the press under way began (the sample's timestamp); nil while released.
    private var pressedAt: UInt64?

    init(hold: Duration) { self.hold = hold }

    /// Whether `value`, the next value of the button's sensor, ends a long press.
    mutating func isLongPress(_ value: SensorSample) -> Bool {
        guard value.channel == SensorReading.value.rawValue else { return false }
        guard let pressed = value.bool else {
            released = false
            pressedAt = nil
            return false
        }
        if pressed {
            if released { pressedAt = value.timestampNs }
            released = false
            return false
        }
        defer {
            released = true
            pressedAt = nil
        }
        guard let start = pressedAt, value.timestampNs >= start else { return false }
        return Duration.nanoseconds(Int64(clamping: value.timestampNs - start)) >= hold
    }
}
