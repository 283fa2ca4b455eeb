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

    /// Opens the pairing window for `length`: new centrals may pair until it closes (by itself,
    /// or `closePairingWindow()`). `reason` goes to the log. Nothing to open with
    /// `security.pairing` `.open`.
    public func openPairingWindow(for length: Duration, reason: String) {
        security.openPairingWindow(for: length, reason: reason)
    }

    public func closePairingWindow() {
        security.closePairingWindow()
    }

    /// Whether new centrals may pair now, and for how long still (nil: no end, or closed).
    public var pairingWindow: (open: Bool, remaining: Duration?) { security.pairingWindow }

    /// Pairing Requests refused outside a pairing window since the host started.
    public var refusedPairings: Int { security.refusedPairings }

    /// Advertises whether the pairing window is open: the flags say LE Limited Discoverable while
    /// it is, LE General Discoverable otherwise (docs/bluetooth.md) and always when pairing is
    /// open at all times.
    public func advertisePairingWindow(_ open: Bool) async throws {
        let limited = open && configuration.security.pairing == .window
        try await advertiser.setLimitedDiscoverable(limited, on: state == .poweredOn ? controller : nil)
    }
}
