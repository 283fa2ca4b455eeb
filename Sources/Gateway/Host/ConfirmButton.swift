import Config
import Sensors

/// The `bluetooth.security.confirm_with` sensor as a button: a press is its value going from
/// released (false) to pressed (true). A button already held when gattway starts, or one whose
/// reading failed in between, does not count until it has been seen released, so a stuck or
/// miswired line never confirms a pairing.
struct ConfirmButton {
    private var released = false

    /// Whether `value`, the next value of the button's sensor, is a press.
    mutating func isPress(_ value: SensorSample) -> Bool {
        guard value.channel == SensorReading.value.rawValue else { return false }
        guard let pressed = value.bool else {
            released = false
            return false
        }
        defer { released = !pressed }
        return pressed && released
    }
}
