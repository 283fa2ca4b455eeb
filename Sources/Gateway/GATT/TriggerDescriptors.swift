import BluetoothATT
import BluetoothCore
import BluetoothGATT
import Notify
import Values

/// The Environmental Sensing trigger descriptors of one notifying ESS characteristic: two ES Trigger
/// Setting descriptors (0x290D) and the ES Configuration descriptor (0x290B) that combines them.
///
/// One state per characteristic for the whole server, not per central: in the Environmental Sensing
/// Service (ESS 1.0 §3.1.2) these descriptors are properties of the server's measurement, which is
/// why a writable trigger setting requires bonding and why ESS defines the Descriptor Value Changed
/// characteristic, whose "Source of Change" flag tells the other clients that a *client* changed
/// one — unlike the CCCD, which is per client by definition (Core Vol 3 Part G 3.3.3.3). A central's
/// accepted write therefore applies to every central subscribed to the characteristic, now and later.
///
/// Until a central writes, the configured notify policy governs and the descriptors read as
/// "value changed" (0x03) and "inactive" (0x00), combined with AND (0x00). After the first write,
/// the written triggers replace the policy's value tests (its `min_interval` stays a floor).
/// Pure: parsing and reads here; `TriggerSettings` keeps them and hands `triggerSet` to the notify driver.
struct TriggerDescriptors: Sendable, Equatable {
    /// ES Trigger Setting descriptors per characteristic: two conditions, e.g. "no less than 10 s"
    /// AND "greater than 25 °C". ESS allows up to three.
    static let settingCount = 2

    private(set) var settings: [ESTriggerSetting] = [.valueChanged] + Array(repeating: .inactive, count: settingCount - 1)
    private(set) var logic = TriggerLogic.and
    /// A central has written one of the descriptors.
    private(set) var isWritten = false
    /// The position of the first ES Trigger Setting in the characteristic's descriptors.
    let firstPosition: Int

    /// `firstPosition`: where `descriptors` start in the characteristic's descriptor list.
    init(firstPosition: Int) {
        self.firstPosition = firstPosition
    }

    /// The descriptors as `saved` left them, checked as a central's writes are: they throw why
    /// when they do not parse in `encoding`.
    init(firstPosition: Int, restoring saved: SavedTriggers, encoding: ValueEncoding) throws(ESSWriteRejection) {
        self.firstPosition = firstPosition
        guard saved.settings.count == Self.settingCount else {
            throw ESSWriteRejection(.writeRequestRejected, "\(saved.settings.count) trigger settings, not \(Self.settingCount)")
        }
        settings = try saved.settings.map { hex throws(ESSWriteRejection) in
            guard let bytes = [UInt8](hexString: hex) else {
                throw ESSWriteRejection(.writeRequestRejected, "trigger setting \(hex) is not hex")
            }
            return try ESTriggerSetting(descriptorValue: bytes, encoding: encoding)
        }
        guard let logic = [UInt8](hexString: saved.configuration) else {
            throw ESSWriteRejection(.writeRequestRejected, "ES Configuration \(saved.configuration) is not hex")
        }
        self.logic = try TriggerLogic(descriptorValue: logic)
        isWritten = true
    }

    /// What the notify engine applies; nil while the configured policy governs.
    var triggerSet: TriggerSet? { isWritten ? TriggerSet(settings, logic: logic) : nil }

    /// The descriptors gattway adds to a notifying ESS characteristic, after its others: reads are
    /// open, writes need an encrypted link (ESS: bonding is mandatory when they are writable; an
    /// LE link is encrypted only with keys from pairing, so this is as close as ATT permissions get).
    static var descriptors: [GATTDescriptor] {
        Array(
            repeating: GATTDescriptor.dynamic(
                ESTriggerSetting.descriptorUUID,
                permissions: [.readable, .writeEncryptionRequired]),
            count: settingCount)
            + [GATTDescriptor.dynamic(TriggerLogic.descriptorUUID, permissions: [.readable, .writeEncryptionRequired])]
    }

    /// The value a read of `descriptor` returns.
    func read(_ descriptor: PublishedDescriptor, encoding: ValueEncoding) -> Result<[UInt8], ATTErrorCode> {
        switch descriptor.uuid {
        case ESTriggerSetting.descriptorUUID:
            guard let index = settingIndex(descriptor) else { return .failure(.unlikelyError) }
            return .success(settings[index].bytes(encoding: encoding))
        case TriggerLogic.descriptorUUID:
            return .success(logic.bytes)
        default:
            return .failure(.unlikelyError)
        }
    }

    /// The state after a central writes `bytes` to `descriptor`, or the ESS error to answer
    /// (0x80 Write Request Rejected, 0x81 Condition Not Supported) and why.
    func writing(
        _ bytes: [UInt8], to descriptor: PublishedDescriptor,
        encoding: ValueEncoding
    ) throws(ESSWriteRejection) -> TriggerDescriptors {
        var next = self
        switch descriptor.uuid {
        case ESTriggerSetting.descriptorUUID:
            guard let index = settingIndex(descriptor) else {
                throw ESSWriteRejection(.writeRequestRejected, "no such trigger setting")
            }
            next.settings[index] = try ESTriggerSetting(descriptorValue: bytes, encoding: encoding)
        case TriggerLogic.descriptorUUID:
            next.logic = try TriggerLogic(descriptorValue: bytes)
        default:
            throw ESSWriteRejection(.writeRequestRejected, "descriptor \(descriptor.uuid) is not writable")
        }
        next.isWritten = true
        return next
    }

    /// Which trigger setting a 0x290D descriptor is, from its position among the characteristic's
    /// descriptors.
    private func settingIndex(_ descriptor: PublishedDescriptor) -> Int? {
        let index = descriptor.position - firstPosition
        return settings.indices.contains(index) ? index : nil
    }
}
