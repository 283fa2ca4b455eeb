import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP

/// Everything the host reports, in order: for logs, tests and the program above.
public enum HostEvent: Equatable, Sendable {
    case stateChanged(PeripheralState)
    case advertisingStarted(AdvertisingPayload, extended: Bool)
    case advertisingStopped
    case connected(Central)
    case disconnected(Central, reason: HCIStatus)
    case dataLengthChanged(Central, maxTxOctets: UInt16, maxRxOctets: UInt16)
    case phyChanged(Central, txPHY: UInt8, rxPHY: UInt8)
    case connectionParametersChanged(Central, interval: UInt16, latency: UInt16, supervisionTimeout: UInt16)
    case connectionParameterUpdateAnswered(Central, accepted: Bool)
    /// Passkey Entry: the user types this passkey on the central. nil when it is the fixed
    /// passkey from the configuration, which is never logged or published.
    case passkeyDisplayed(Central, passkey: UInt32?)
    /// Numeric Comparison: the user checks that the central shows this number and confirms with
    /// `confirmNumericComparison()` (only when `HostConfiguration.confirmsNumericComparison`).
    case numericComparison(Central, number: UInt32)
    /// Pairing finished; `identity` is the central's identity address (its connection address
    /// when it distributed none), `bonded` whether its keys were stored.
    case paired(Central, identity: BluetoothAddress, bonded: Bool)
    case pairingFailed(Central, reason: String)
    /// A central asked to pair while no pairing window was open; it got Pairing Failed.
    case pairingRefused(Central)
    /// The pairing window opened or closed (`PeripheralHost.openPairingWindow`, its time up).
    case pairingWindowChanged(open: Bool)
    /// The link's security changed: encrypted (with which key), or a bond was stored.
    case securityChanged(Central, BluetoothGATT.LinkSecurity)
}
