import BluetoothCore
import BluetoothGATT
import BluetoothHost
import Config
import Values

/// Answers the control socket's requests from the running gateway's parts.
struct GatewayControl: Sendable {
    let running: RunningConfiguration
    let host: PeripheralHost
    let peripheral: Peripheral
    let pipeline: ValuePipeline
    let mirror: MirrorRunner?

    func answer(_ request: ControlRequest) async -> ControlResponse {
        let config = await running.config
        if let asked = request.stateDirectory, asked != config.stateDirectory {
            return .failure(
                "the gattway answering here serves state_dir \(config.stateDirectory), not \(asked): "
                    + "give each gattway its own runtime_dir")
        }
        switch request.command {
        case .status:
            return ControlResponse(status: await status(config))
        case .reload:
            return ControlResponse(reload: await running.reload())
        case .bondsList:
            return ControlResponse(bonds: await host.bonds.bonds.map(\.description))
        case .bondsRemove:
            guard let text = request.address else { return .failure("bonds.remove needs an address") }
            guard BluetoothAddress(text) != nil else {
                return .failure("\(text) is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
            }
            // The address type is not given: public first, then random (as the files' fallback).
            do {
                for kind in [BluetoothAddress.Kind.public, .random] {
                    if let address = BluetoothAddress(text, kind: kind), try await host.removeBond(address) {
                        return ControlResponse(removed: 1)
                    }
                }
            } catch {
                return .failure(error.description)
            }
            return .failure("no bond for \(text)")
        case .bondsClear:
            do {
                return ControlResponse(removed: try await host.removeAllBonds())
            } catch {
                return .failure(error.description)
            }
        case .pair:
            let security = config.bluetooth.security
            guard security.pairing == .window else {
                return ControlResponse(pairing: await pairingState(config))
            }
            let length = request.seconds.map { Duration.seconds($0) } ?? security.pairingWindow
            guard (Duration.seconds(1)...Duration.seconds(3600)).contains(length) else {
                return .failure("a pairing window lasts 1s to 1h, not \(request.seconds ?? 0)s")
            }
            await host.openPairingWindow(for: length, reason: "gattway pair")
            return ControlResponse(pairing: await pairingState(config))
        case .pairClose:
            await host.closePairingWindow()
            return ControlResponse(pairing: await pairingState(config))
        }
    }

    func pairingState(_ config: GatewayConfig) async -> PairingState {
        let window = await host.pairingWindow
        return PairingState(
            policy: config.bluetooth.security.pairing.rawValue, open: window.open,
            remaining: window.remaining.map { Int(($0 / .seconds(1)).rounded(.up)) },
            refused: await host.refusedPairings)
    }

    func status(_ config: GatewayConfig) async -> GatewayStatus {
        let layout = await pipeline.layout
        var refsByClientConfiguration: [UInt16: CharacteristicRef] = [:]
        for ref in layout.characteristics.keys {
            if let handle = await pipeline.publishedCharacteristic(ref)?.clientConfigurationHandle {
                refsByClientConfiguration[handle] = ref
            }
        }
        var centrals: [GatewayStatus.Central] = []
        for (central, security) in await host.connectedLinks {
            let id = GATTPeripheralBinding.centralID(central)
            let subscriptions = (await peripheral.clientConfigurations(of: id) ?? [:]).compactMap { handle, bits in
                refsByClientConfiguration[handle].map { ref in (ref, bits) }
            }
            centrals.append(
                GatewayStatus.Central(
                    address: "\(central.address)",
                    mtu: (await peripheral.maximumUpdateValueLength(for: id) ?? 20) + 3,
                    security: MirrorMapping.linkSecurity(security).rawValue, bonded: security.isBonded,
                    subscriptions: subscriptions.sorted { $0.0 < $1.0 }.map { ref, bits in
                        "\(ref) " + (bits & 0x0002 != 0 ? "indicate" : "notify")
                    }))
        }
        var sensors: [GatewayStatus.Sensor] = []
        let unavailable = await pipeline.unavailableSensors
        for sensor in config.sensors {
            var values: [GatewayStatus.Value] = []
            for characteristic in layout.characteristics.values.sorted(by: { $0.ref < $1.ref }) {
                guard case .sensor(let id, _) = characteristic.config.source, id == sensor.id else { continue }
                let bytes = await pipeline.currentBytes(characteristic.ref)
                values.append(
                    GatewayStatus.Value(
                        characteristic: characteristic.ref.path,
                        value: bytes.map { ValueJSON.literal($0, encoding: characteristic.config.encoding) }))
            }
            sensors.append(GatewayStatus.Sensor(id: sensor.id, values: values, unavailable: unavailable[sensor.id]))
        }
        return GatewayStatus(
            controller: "\(config.bluetooth.transport)", state: await host.state.rawValue,
            advertising: await host.isAdvertising, centrals: centrals, sensors: sensors,
            counters: await pipeline.counters, mqtt: await mirror?.status(), pairing: await pairingState(config))
    }
}

extension ValuePipeline {
    /// The counters of the `state` topic's status event now.
    var counters: [String: Int] {
        guard case .status(_, _, let counters, _, _) = statusEvent else { return [:] }
        return counters
    }
}
