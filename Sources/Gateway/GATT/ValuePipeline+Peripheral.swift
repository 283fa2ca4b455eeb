import BluetoothGATT
import Logging
import Notify
import Values

/// The peripheral's side of the pipeline: publishing the services, and what the peripheral
/// reports.
extension ValuePipeline {
    // MARK: Publishing

    /// Publishes every configured service and serves reads and writes from this pipeline. Called
    /// when the peripheral reaches `poweredOn` (CoreBluetooth's rule: publish once powered on);
    /// values that arrived before are served from the start.
    func publish() async throws {
        // Weak: the peripheral keeps the handlers, and the pipeline the peripheral.
        let applied: @Sendable () -> Void = { [weak self] in self?.onLoop { $0.writesApplied() } }
        await peripheral.setRequestHandlers(values.handlers(triggers: triggers, applied: applied))
        try await publication.publish(layout, on: peripheral, values: values, triggers: triggers, logger: logger)
    }

    /// The published characteristic of `ref` (after `publish()`).
    public func publishedCharacteristic(_ ref: CharacteristicRef) -> PublishedCharacteristic? {
        publication.characteristics[ref]
    }

    /// What the peripheral reports: connections, subscriptions, and room on the link.
    public func handle(_ event: PeripheralEvent) async {
        switch event {
        case .centralConnected(let central):
            let mtu = await peripheral.maximumUpdateValueLength(for: central).map { $0 + 3 } ?? 23
            eventSink?(.centralConnected(central, mtu: mtu))
        case .centralDisconnected(let central):
            notifier.disconnect(central)
            eventSink?(.centralDisconnected(central))
            // The departed central's counters are gone: `state` says so now, not at the next tick.
            eventSink?(statusEvent)
        case .subscribed(let central, let characteristic):
            guard let ref = publication.ref(of: characteristic) else { return }
            // The event does not say which the central enabled; notification when offered.
            let kind: UpdateKind = characteristic.properties.contains(.notify) ? .notification : .indication
            notifier.subscribe(central, to: ref, kind: kind)
            eventSink?(.subscribed(ref, central, kind))
        case .unsubscribed(let central, let characteristic):
            guard let ref = publication.ref(of: characteristic) else { return }
            notifier.unsubscribe(central, from: ref)
            eventSink?(.unsubscribed(ref, central))
        case .readyToUpdateSubscribers:
            notifier.linkReady()
        case .stateChanged(let state):
            status.peripheralChanged(state)
            eventSink?(statusEvent)
            guard state == .poweredOn, publication.services == nil else { return }
            do {
                try await publish()
            } catch {
                logger.error("publishing the GATT services failed", metadata: ["error": "\(error)"])
            }
            return
        case .maximumUpdateValueLengthChanged(let central, let length):
            eventSink?(.mtuChanged(central, mtu: length + 3))
            return
        case .securityChanged(let central, let security):
            eventSink?(.securityChanged(central, security))
            return
        case .writeCommandRefused(let central, let handle, let code):
            status.writeCommandRefused()
            logger.debug(
                "write command refused",
                metadata: ["central": "\(central)", "handle": "\(handle)", "reason": "\(code)"])
            return
        case .serviceAdded, .serviceRemoved:
            return
        }
        notifier.drain()
    }
}
