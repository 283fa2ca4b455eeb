import BluetoothHost
import BluetoothL2CAP
import BluetoothSMP
import Config
import FoundationEssentials

/// The configuration's `bluetooth` section as the BLE host takes it.
public enum HostMapping {
    public static func configuration(_ config: GatewayConfig) throws -> HostConfiguration {
        let advertising = config.bluetooth.advertising
        let settings = AdvertisingSettings(
            localName: advertising.localName, serviceUUIDs: advertising.serviceUUIDs,
            appearance: config.device.appearance, includeTxPower: advertising.includesTxPower,
            manufacturerData: advertising.manufacturerData.map { ($0.companyID, $0.data) },
            intervalMilliseconds: Int((advertising.interval / .milliseconds(1)).rounded()))
        let connection = config.bluetooth.connection
        return HostConfiguration(
            transport: config.bluetooth.transport, stateDirectory: config.stateDirectory,
            advertising: settings, maxCentrals: config.bluetooth.maxCentrals,
            security: try security(config.bluetooth.security),
            confirmsNumericComparison: config.bluetooth.security.confirmWith != nil,
            firstStartPairingWindow: config.bluetooth.security.firstStartWindow,
            preferredConnection: connection.asksCentrals
                ? ConnectionParameters(
                    intervalMin: connection.minIntervalUnits, intervalMax: connection.maxIntervalUnits,
                    latency: UInt16(clamping: connection.latency),
                    supervisionTimeout: connection.supervisionTimeoutUnits) : nil)
    }

    /// `bluetooth.security` as the Security Manager takes it. The configuration layer already
    /// checked the passkey's range, so this throws only on a programming error.
    public static func security(_ config: SecurityConfig) throws -> SecurityConfiguration {
        let io: IOCapability =
            switch config.ioCapabilities {
            case .displayOnly: .displayOnly
            case .displayYesNo: .displayYesNo
            case .keyboardOnly: .keyboardOnly
            case .noInputNoOutput: .noInputNoOutput
            case .keyboardDisplay: .keyboardDisplay
            }
        return try SecurityConfiguration(
            ioCapability: io, fixedPasskey: config.passkey,
            allowLegacy: config.allowLegacy,
            pairing: config.pairing == .open ? .open : .window)
    }
}
