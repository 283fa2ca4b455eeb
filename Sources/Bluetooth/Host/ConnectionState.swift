import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP

/// Everything the host keeps for one connected central; dropped whole on disconnection.
final class ConnectionState {
    let central: Central
    let bearer: ATTBearer
    var reassembler = L2CAPReassembler()
    var signaling = LESignalingChannel()
    /// What the GATT server was last told about the link's security.
    var security = LinkSecurity.unencrypted

    init(central: Central, bearer: ATTBearer) {
        self.central = central
        self.bearer = bearer
    }
}
