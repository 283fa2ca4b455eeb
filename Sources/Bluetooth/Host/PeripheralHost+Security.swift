import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothSMP

/// The host's side of security: the program-facing calls, and the HCI commands the
/// `SecurityCoordinator` asks for, which run off the event path.
extension PeripheralHost {
    /// The bonds the host knows now (for tests and `gattway bonds`, through the control socket).
    public var bonds: BondRegistry { security.bonds }

    /// HCI LE Long Term Key Request: the key of the pairing under way or of the central's bond,
    /// else the Negative Reply (the controller then refuses encryption).
    func longTermKeyRequested(handle: UInt16, rand: UInt64, ediv: UInt16) {
        guard let central = connections[handle]?.central else { return }
        let command = security.longTermKeyReply(to: central, rand: rand, ediv: ediv)
        spawn { host in
            do {
                try await host.commands.executeChecked(command)
            } catch {
                host.logger.warning("\(central): \(command.opcode) failed: \(error)")
            }
        }
    }

    /// The user confirms the Numeric Comparison number (a press of the confirm button): the one
    /// pairing waiting for it goes on. With two or more waiting nobody can tell which number the
    /// press was meant for, so all of them are refused; with none, the press does nothing.
    public func confirmNumericComparison() async {
        await security.confirmNumericComparison()
    }
}
