import BluetoothHCI
import BluetoothL2CAP

/// Everything the host keeps for one connected central; dropped whole on disconnection.
final class ConnectionState {
    let central: Central
    let bearer: ATTBearer
    var reassembler = L2CAPReassembler()
    var signaling = LESignalingChannel()

    init(central: Central, bearer: ATTBearer) {
        self.central = central
        self.bearer = bearer
    }
}

/// The Security Manager's answer until pairing is implemented: every pairing attempt gets
/// Pairing Failed with reason Pairing Not Supported (Core Vol 3 Part H 3.5.5).
enum SecurityManagerRefusal {
    static let pairingFailed: UInt8 = 0x05
    static let pairingNotSupported: UInt8 = 0x05

    /// The reply to an SMP PDU, or nil for PDUs that must not be answered (a Pairing Failed from
    /// the central, or an empty PDU).
    static func reply(to pdu: [UInt8]) -> [UInt8]? {
        guard let code = pdu.first, code != pairingFailed else { return nil }
        return [pairingFailed, pairingNotSupported]
    }
}
