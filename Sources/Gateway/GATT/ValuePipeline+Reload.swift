import BluetoothGATT
import Config
import Logging
import Notify
import Sensors
import Values

/// A reload's changes: a new GATT layout, or new notify policies.
extension ValuePipeline {
    /// A reload's GATT layout (`ConfigChanges` found the services changed). The services that
    /// changed (`GATTLayoutChange`) are removed and published anew, and every central that enabled
    /// Service Changed gets one indication over the handles they took; the characteristics of the
    /// others keep their handles, subscriptions, values and counters. A new characteristic starts
    /// with its configured value, or its sensor's reading among `currentReadings` (the running
    /// sensors' latest; presses excepted), or none until its source gives one. Before the services are first
    /// published (the controller not on yet) `publish()` will publish the new layout; while the
    /// controller is off after that, nothing changes and this throws.
    func changeLayout(to newLayout: GATTLayout, currentReadings: [SensorSample]) async throws -> GATTLayoutChange {
        if publication.services != nil, status.peripheralState != .poweredOn {
            throw PeripheralError.notPoweredOn(status.peripheralState)
        }
        let change = try GATTLayoutChange(from: publication.services ?? [], to: newLayout)
        let keptRefs = Set(change.kept.flatMap(\.refs))
        for ref in layout.characteristics.keys where !keptRefs.contains(ref) { notifier.forget(ref) }
        layout = newLayout
        router = ValueRouter(layout: newLayout)
        values.relayout(newLayout, keeping: keptRefs)
        triggers.relayout(newLayout, keeping: keptRefs)
        for (ref, characteristic) in newLayout.characteristics {
            notifier.configure(ref, policy: characteristic.config.notify)
        }
        for (ref, sample) in router.configuredSamples where !keptRefs.contains(ref) {
            values.set(sample, of: ref)
            notifier.update(ref, sample: sample)
        }
        // A press is an event, not a state: the last one is not a new characteristic's value.
        for sample in currentReadings where SensorReading(rawValue: sample.channel)?.isEvent != true {
            guard let value = ValueRouter.value(of: sample.reading) else { continue }
            for ref in router.characteristics(carrying: sample.sensor, channel: sample.channel) ?? []
            where !keptRefs.contains(ref) {
                setValue(value, of: ref)
            }
        }
        guard publication.services != nil else { return change }
        await peripheral.holdServiceChanged()
        do {
            try publication.change(to: newLayout, change, on: peripheral, values: values, triggers: triggers)
        } catch {
            await peripheral.releaseServiceChanged()
            throw error
        }
        await peripheral.releaseServiceChanged()
        logger.info(
            "services changed",
            metadata: [
                "kept": "\(change.kept.count)", "removed": "\(change.removed.count)",
                "published": "\(change.added.count)"
            ])
        notifier.drain()
        return change
    }

    /// A reload's notify policies, from `services` laid out as this pipeline's (`ConfigChanges`
    /// found only policies changed): every subscriber gets each characteristic's new policy from
    /// its next value on, on its connection as it is.
    public func changeNotifyPolicies(_ services: [ServiceConfig]) {
        for ref in layout.characteristics.keys {
            notifier.configure(ref, policy: services[ref.service].characteristics[ref.characteristic].notify)
        }
        advance()
    }
}
