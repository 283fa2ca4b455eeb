import BluetoothCore
import BluetoothGATT
import BluetoothHCI

extension PeripheralHost {
    /// Reset, learn the controller, set masks and address, then power on and advertise.
    func bringUp() async throws {
        let readTxPower = configuration.advertising?.includeTxPower == true || advertiser.settings?.includeTxPower == true
        guard
            let info = try await ControllerBringUp.run(
                on: commands, stateDirectory: configuration.stateDirectory, stateWriter: stateWriter, readTxPower: readTxPower,
                logger: logger)
        else {
            await setState(.unsupported)
            return
        }
        controller = info
        guard let transport = commands.transport else { throw HostError("no controller") }
        transmitter.start(transport: transport, buffers: info.buffers)
        await setState(.poweredOn)
        if !grantedTransmitCredits {
            // Once per host: later the credits circulate (delivered or dropped updates return).
            grantedTransmitCredits = true
            server.transmitCreditsAvailable(configuration.transmitQueueCapacity)
        }
        try await advertiser.configureAndEnable(on: info, connected: connections.count)
    }

    /// Restarts advertising after a connection or disconnection, logging rather than failing.
    func readvertise() async {
        guard state == .poweredOn else { return }
        do {
            try await advertiser.enable(on: controller, connected: connections.count)
        } catch {
            logger.error("could not restart advertising: \(error)")
        }
    }
}
