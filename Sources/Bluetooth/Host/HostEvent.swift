import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP

/// Where the host's events go (`PeripheralHost.setEventSink`): called on the event loop, in
/// order, in the call that produced each (a packet's, a timer's, a command's answer), so an event
/// reaches the program with no task, stream or queue between. It must not block; work that waits
/// (an HCI command) starts a task of its own.
public typealias HostEventSink = @Sendable (HostEvent) -> Void

/// The host's one outlet for its events, shared by the components that report them and set once
/// at wiring time (`PeripheralHost.setEventSink`). Used only on the host's executor, the event
/// loop. With no sink set an event is dropped where it is reported: nothing queues in the host
/// for a consumer that has not started or has fallen behind.
final class HostEventOutlet {
    var sink: HostEventSink?

    init(_ sink: HostEventSink? = nil) { self.sink = sink }

    func callAsFunction(_ event: HostEvent) { sink?(event) }
}

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
