import BluetoothGATT
import Notify
import Values

/// Where the pipeline's events go (the MQTT mirror): called on the event loop, in order, in the
/// call that produced each, so a value reaches the broker with no task resumed and no queue in
/// between. It must not call back into the pipeline.
public typealias PipelineEventSink = @Sendable (PipelineEvent) -> Void

/// What the pipeline tells the MQTT mirror, in order.
public enum PipelineEvent: Sendable, Equatable {
    /// The characteristic's new value, as its bytes on air: MQTT prints what a phone reads.
    case valueChanged(CharacteristicRef, [UInt8])
    /// The characteristic's value is no longer current (`unavailable`: its sensor has given no
    /// good reading for its deadline), or is again (nil: a good reading came).
    case availabilityChanged(CharacteristicRef, unavailable: String?)
    case centralConnected(CentralID, mtu: Int)
    /// The central's ATT_MTU changed (an MTU exchange).
    case mtuChanged(CentralID, mtu: Int)
    /// The central's link security changed (encryption, pairing, bond).
    case securityChanged(CentralID, LinkSecurity)
    case centralDisconnected(CentralID)
    case subscribed(CharacteristicRef, CentralID, UpdateKind)
    case unsubscribed(CharacteristicRef, CentralID)
    /// A central's accepted write, as the bytes it wrote.
    case written(CharacteristicRef, CentralID, [UInt8], GATTWriteKind)
    /// A central's accepted write to an output could not drive its line (the write was already
    /// answered: an ATT write is acknowledged before the line is driven).
    case outputFailed(CharacteristicRef, CentralID, reason: String)
    /// The peripheral's state and the notify counters summed over characteristics, on every
    /// state change and every statistics interval (MQTT's `state` topic).
    /// `pairing`: pairing is open; `unavailable`: the sensors whose readings are not current, with why.
    case status(
        peripheral: String, advertising: Bool, counters: [String: Int], pairing: Bool = false,
        unavailable: [String: String] = [:])
}
