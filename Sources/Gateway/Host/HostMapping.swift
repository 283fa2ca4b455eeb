import BluetoothHost
import Config
import Foundation

/// The configuration's `bluetooth` section as the BLE host takes it.
public enum HostMapping {
    public static func configuration(_ config: GatewayConfig) -> HostConfiguration {
        let advertising = config.bluetooth.advertising
        let settings = AdvertisingSettings(
            localName: advertising.localName, serviceUUIDs: advertising.serviceUUIDs,
            appearance: config.device.appearance, includeTxPower: advertising.txPower != nil,
            manufacturerData: advertising.manufacturerData.map { ($0.companyID, $0.data) },
            intervalMilliseconds: Int((advertising.interval / .milliseconds(1)).rounded()))
        return HostConfiguration(transport: config.bluetooth.transport, stateDirectory: config.stateDirectory,
                                 advertising: settings, maxCentrals: config.bluetooth.maxCentrals)
    }
}

/// Bluetooth addresses of connected centrals by the `CentralID` the GATT binding gives them, for
/// MQTT topics; filled from the host's connection events.
final class CentralAddresses: @unchecked Sendable {
    private let lock = NSLock()
    private var addresses: [UInt16: String] = [:]

    func connected(_ central: Central) {
        lock.withLock { addresses[UInt16(truncatingIfNeeded: central.connectionID)] = "\(central.address)" }
    }

    /// The address, or `handle-N` for a central the host has not reported.
    func address(_ id: UInt16) -> String {
        lock.withLock { addresses[id] } ?? "handle-\(String(id, radix: 16))"
    }
}
