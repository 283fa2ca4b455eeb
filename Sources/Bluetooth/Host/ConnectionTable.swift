import BluetoothCore
import BluetoothGATT

/// The connected centrals by connection handle, and the ids that tell a central apart from an
/// earlier one on the same handle. Owned by `PeripheralHost` and used only on its executor.
final class ConnectionTable {
    private var byHandle: [UInt16: ConnectionState] = [:]
    private var nextConnectionID: UInt64 = 1

    subscript(_ handle: UInt16) -> ConnectionState? { byHandle[handle] }

    var count: Int { byHandle.count }

    /// Every connection, in connection order.
    var inOrder: [ConnectionState] {
        byHandle.values.sorted { $0.central.connectionID < $1.central.connectionID }
    }

    /// A central connected on `handle`: it gets the next connection id and an ATT bearer.
    func open(handle: UInt16, peer: BluetoothAddress, transmitter: LinkTransmitter) -> ConnectionState {
        let central = Central(connectionID: nextConnectionID, handle: handle, address: peer)
        nextConnectionID += 1
        let connection = ConnectionState(central: central, bearer: ATTBearer(central: central, transmitter: transmitter))
        byHandle[handle] = connection
        return connection
    }

    func remove(_ handle: UInt16) -> ConnectionState? { byHandle.removeValue(forKey: handle) }

    /// Forgets every connection; returns them in connection order.
    func removeAll() -> [ConnectionState] {
        let all = inOrder
        byHandle = [:]
        return all
    }
}
