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
    /// Returns once the bond file says so too (written off the event loop).
    public func removeBond(_ address: BluetoothAddress) async throws(BondStore.Error) -> Bool {
        guard security.removeBond(address) else { return false }
        if let failure = await savedBonds() { throw failure }
        return true
    }

    /// Forgets every bond; returns how many there were, once the bond file says so too.
    public func removeAllBonds() async throws(BondStore.Error) -> Int {
        let count = security.removeAllBonds()
        if let failure = await savedBonds() { throw failure }
        return count
    }

    /// The bonds as they are now, on disk: nil, or why not.
    private func savedBonds() async -> BondStore.Error? {
        await withCheckedContinuation { (done: CheckedContinuation<BondStore.Error?, Never>) in
            security.saveBonds { done.resume(returning: $0) }
        }
    }
}
