import BluetoothGATT
import Logging
import Notify
import Values

/// The peripheral's side of the pipeline: publishing the services, and what the peripheral
/// reports.
extension ValuePipeline {
    // MARK: Publishing

    /// Publishes every configured service and serves reads and writes from this pipeline. Called
    /// when the peripheral reaches `poweredOn` (CoreBluetooth's rule: publish once powered on),
    /// in the call that reported it; values that arrived before are served from the start.
    func publish() throws {
        // Weak: the peripheral keeps the handlers, and the pipeline the peripheral.
        let applied: @Sendable () -> Void = { [weak self] in self?.onLoop { $0.writesApplied() } }
        peripheral.onLoop(with: values.handlers(triggers: triggers, applied: applied)) { $0.setRequestHandlers($1) }
        try publication.publish(layout, on: peripheral, values: values, triggers: triggers, logger: logger)
    }

    /// From now on the peripheral's events reach the pipeline in the call that produced them
    /// (both run on the event loop). Before the host runs, so the first power-on finds it.
    public func attach() async {
        // Weak: the peripheral keeps its sink, and the pipeline the peripheral.
        await peripheral.setEventSink { [weak self] event in self?.onLoop(with: event) { $0.handle($1) } }
    }

    /// The published characteristic of `ref` (after `publish()`).
    public func publishedCharacteristic(_ ref: CharacteristicRef) -> PublishedCharacteristic? {
        publication.characteristics[ref]
    }

    /// What the peripheral reports (its event sink, `attach`): connections, subscriptions, and
    /// room on the link, when a full link resumes what waited for it.
    public func handle(_ event: PeripheralEvent) {
        switch event {
        case .centralConnected(let central):
            let length = peripheral.onLoop(with: central) { $0.maximumUpdateValueLength(for: $1) }
            let mtu = length.map { $0 + 3 } ?? 23
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
                try publish()
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
