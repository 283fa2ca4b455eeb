import BluetoothCore
import BluetoothGATT
import BluetoothSMP

/// The host's side of security: the program-facing calls.
extension PeripheralHost {
    /// The bonds the host knows now (for tests and `gattway bonds`, through the control socket).
    public var bonds: BondRegistry { security.bonds }

    /// The user confirms the Numeric Comparison number (a press of the confirm button): the one
    /// pairing waiting for it goes on. With two or more waiting nobody can tell which number the
    /// press was meant for, so all of them are refused; with none, the press does nothing.
    public func confirmNumericComparison() {
        security.confirmNumericComparison()
    }
}
