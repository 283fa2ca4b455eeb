import BluetoothGATT
import Values
import Logging

/// The layout's services as the peripheral published them: adds them in publishing order, tells
/// the value store each characteristic's value handle, and answers which published characteristic
/// a configured one is and back. Owned by the `ValuePipeline` and used only on its executor.
final class GATTPublication {
    private(set) var characteristics: [CharacteristicRef: PublishedCharacteristic] = [:]
    private var refsByValueHandle: [UInt16: CharacteristicRef] = [:]

    var isEmpty: Bool { characteristics.isEmpty }

    /// The configured characteristic published at `valueHandle`.
    func ref(valueHandle: UInt16) -> CharacteristicRef? { refsByValueHandle[valueHandle] }

    /// Publishes every service of `layout` on `peripheral`, a service after those it includes, and
    /// registers each characteristic's value handle (and trigger descriptors) with `values`.
    nonisolated(nonsending) func publish(
        _ layout: GATTLayout, on peripheral: Peripheral, values: CharacteristicValues, logger: Logger
    ) async throws {
        var ids: [String: GATTServiceID] = [:]
        for index in layout.publishingOrder {
            let service = try layout.service(index) { ids[$0] }
            let publishedService = try await peripheral.add(service)
            if let name = layout.serviceName(index) { ids[name] = publishedService.id }
            for (position, characteristic) in publishedService.characteristics.enumerated() {
                guard let ref = layout.ref(service: index, characteristic: position) else { continue }
                characteristics[ref] = characteristic
                refsByValueHandle[characteristic.valueHandle] = ref
                let triggerPosition = service.characteristics[position].descriptors.firstIndex {
                    $0.uuid == ESTriggerSetting.descriptorUUID && $0.value == .dynamic
                }
                values.register(ref, valueHandle: characteristic.valueHandle, triggerPosition: triggerPosition)
            }
        }
        logger.info(
            "services published",
            metadata: [
                "services": "\(layout.publishingOrder.count)",
                "characteristics": "\(characteristics.count)"
            ])
    }
}
