import BluetoothCore
import BluetoothGATT
import BluetoothSMP

/// What the control socket asks of the running host (`gattway status`, `gattway bonds`): the
/// links as they are now, and bonds forgotten in memory and in the bond file together, so the
/// service cannot write a removed bond back.
extension PeripheralHost {
    /// Each connected central with its link's security, in connection order.
    public var connectedLinks: [(central: Central, security: BluetoothGATT.LinkSecurity)] {
        connections.inOrder.map { ($0.central, $0.security) }
    }

    /// Forgets the bond of `address` (identity, or a private address its IRK resolves); false
    /// when there is none. A central connected on that bond's key keeps its link until it
    /// disconnects; it must pair again to encrypt the next one.
    public func removeBond(_ address: BluetoothAddress) throws(BondStore.Error) -> Bool {
        try security.removeBond(address)
    }

    /// Forgets every bond; returns how many there were.
    public func removeAllBonds() throws(BondStore.Error) -> Int {
        try security.removeAllBonds()
    }
}
