import BluetoothGATT
import EventLoop
import Logging
import Values

/// The layout's services as the peripheral published them: adds them in publishing order, tells
/// the value store each characteristic's value handle (and the trigger settings where its trigger
/// descriptors are), and answers which published characteristic
/// a configured one is and back. A reload's layout replaces the services that changed
/// (`change`). Owned by the `ValuePipeline` and used only on its executor, the event loop, where
/// the peripheral runs too: it calls the peripheral with `onLoop`, so the pipeline publishes in
/// the call that told it of the power-on.
final class GATTPublication {
    /// Found by the ref's positions, not hashed: the notify driver looks one up for every update
    /// it sends.
    private(set) var characteristics = CharacteristicTable<PublishedCharacteristic>()
    private var refsByValueHandle: [UInt16: CharacteristicRef] = [:]
    /// The configured services as published, in publishing order; nil before `publish`.
    private(set) var services: [PublishedLayoutService]?

    /// The configured characteristic published as `characteristic`; nil for one a reload removed
    /// (its events may still be on their way when its handles serve another).
    func ref(of characteristic: PublishedCharacteristic) -> CharacteristicRef? {
        guard let ref = refsByValueHandle[characteristic.valueHandle], characteristics[ref] == characteristic else {
            return nil
        }
        return ref
    }

    /// Publishes every service of `layout` on `peripheral`, a service after those it includes, and
    /// registers each characteristic's value handle with `values` (its trigger descriptors with
    /// `triggers`).
    func publish(
        _ layout: GATTLayout, on peripheral: Peripheral, values: CharacteristicValues, triggers: TriggerSettings, logger: Logger
    ) throws {
        services = []
        var ids: [String: GATTServiceID] = [:]
        for index in layout.publishingOrder {
            try publishService(index, of: layout, on: peripheral, values: values, triggers: triggers, includedIDs: &ids)
        }
        logger.info(
            "services published",
            metadata: [
                "services": "\(layout.publishingOrder.count)",
                "characteristics": "\(refsByValueHandle.count)"
            ])
    }

    /// A reload's layout: the services `change` removes go, those it adds are published (after
    /// those they include), the kept ones stay as they are. The caller holds Service Changed back
    /// around this, so the centrals hear of it once.
    func change(
        to layout: GATTLayout, _ change: GATTLayoutChange, on peripheral: Peripheral, values: CharacteristicValues,
        triggers: TriggerSettings
    ) throws {
        let keptRefs = Set(change.kept.flatMap(\.refs))
        for (valueHandle, ref) in refsByValueHandle where !keptRefs.contains(ref) {
            refsByValueHandle[valueHandle] = nil
            characteristics[ref] = nil
        }
        services = change.kept
        var ids: [String: GATTServiceID] = [:]
        for service in change.kept {
            if let name = layout.serviceName(service.index) { ids[name] = service.published.id }
        }
        for service in change.removed {
            _ = try peripheral.onLoop(with: service.published.id) { peripheral, id throws(PeripheralError) in
                try peripheral.remove(id)
            }
        }
        for index in change.added {
            try publishService(index, of: layout, on: peripheral, values: values, triggers: triggers, includedIDs: &ids)
        }
    }

    /// Publishes configured service `index` and registers its characteristics; `includedIDs` (the
    /// published services by configured name) gets it too.
    private func publishService(
        _ index: Int, of layout: GATTLayout, on peripheral: Peripheral, values: CharacteristicValues, triggers: TriggerSettings,
        includedIDs ids: inout [String: GATTServiceID]
    ) throws {
        let service = try layout.service(index) { ids[$0] }
        let publishedService = try peripheral.onLoop(with: service) { peripheral, service throws(PeripheralError) in
            try peripheral.add(service)
        }
        if let name = layout.serviceName(index) { ids[name] = publishedService.id }
        services?.append(
            PublishedLayoutService(
                index: index, service: service, published: publishedService, refs: layout.refs(ofService: index)))
        for (position, characteristic) in publishedService.characteristics.enumerated() {
            guard let ref = layout.ref(service: index, characteristic: position) else { continue }
            characteristics[ref] = characteristic
            refsByValueHandle[characteristic.valueHandle] = ref
            let triggerPosition = service.characteristics[position].descriptors.firstIndex {
                $0.uuid == ESTriggerSetting.descriptorUUID && $0.value == .dynamic
            }
            values.register(ref, valueHandle: characteristic.valueHandle)
            if let triggerPosition { triggers.register(ref, firstPosition: triggerPosition) }
        }
    }
}
