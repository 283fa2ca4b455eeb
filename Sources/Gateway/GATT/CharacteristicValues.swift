import Synchronization
import BluetoothATT
import BluetoothGATT
import FoundationEssentials
import Glibc
import Logging
import Notify
import Values

/// Each characteristic's current value and trigger descriptors, served to reads, and the check of
/// centrals' writes.
///
/// The GATT server's request handlers are synchronous and run inside the peripheral actor, so
/// they cannot await the pipeline actor: they read and write here, under a lock, and accepted
/// writes are handed to the pipeline as `CentralWrite`s through `writes`, accepted trigger
/// descriptor writes as `TriggerChange`s through `triggerChanges`.
final class CharacteristicValues: @unchecked Sendable {
    struct Entry {
        let ref: CharacteristicRef
        let encoding: ValueEncoding
        var bytes: [UInt8]
        /// The ESS trigger descriptors, when the characteristic has them.
        var triggers: TriggerDescriptors?
    }

    private let lock = Mutex(())
    private let logger: Logger
    // Guarded by `lock`. An array with the positions of value handles beside it, not a dictionary
    // of entries: a value set in a dictionary goes through its modify accessors, which here cost
    // three heap allocations per sensor value; an array element is changed in place.
    private var entries: [Entry] = []
    private var positions: [UInt16: Int] = [:]
    private let writeContinuation: AsyncStream<CentralWrite>.Continuation
    let writes: AsyncStream<CentralWrite>
    private let triggerContinuation: AsyncStream<TriggerChange>.Continuation
    let triggerChanges: AsyncStream<TriggerChange>

    init(logger: Logger) {
        self.logger = logger
        (writes, writeContinuation) = AsyncStream.makeStream(of: CentralWrite.self)
        (triggerChanges, triggerContinuation) = AsyncStream.makeStream(of: TriggerChange.self)
    }

    /// `triggerPosition`: where the characteristic's trigger descriptors start in its descriptor
    /// list, when it has them.
    func register(
        _ ref: CharacteristicRef, valueHandle: UInt16, encoding: ValueEncoding, initial: [UInt8],
        triggerPosition: Int?
    ) {
        let entry = Entry(
            ref: ref, encoding: encoding, bytes: initial,
            triggers: triggerPosition.map { TriggerDescriptors(firstPosition: $0) })
        lock.withLock { _ in
            if let position = positions[valueHandle] {
                entries[position] = entry
            } else {
                positions[valueHandle] = entries.count
                entries.append(entry)
            }
        }
    }

    func set(_ bytes: [UInt8], valueHandle: UInt16) {
        lock.withLock { _ in
            if let position = positions[valueHandle] { entries[position].bytes = bytes }
        }
    }

    func bytes(valueHandle: UInt16) -> [UInt8]? {
        lock.withLock { _ in entry(valueHandle)?.bytes }
    }

    /// The entry of a value handle. Call with `lock` held.
    private func entry(_ valueHandle: UInt16) -> Entry? {
        positions[valueHandle].map { entries[$0] }
    }

    var handlers: GATTRequestHandlers {
        GATTRequestHandlers(read: { [self] request in read(request) }, write: { [self] batch in write(batch) })
    }

    private func read(_ request: GATTReadRequest) -> Result<[UInt8], ATTErrorCode> {
        lock.withLock { _ in
            guard let entry = entry(request.characteristic.valueHandle) else { return .failure(.unlikelyError) }
            guard let descriptor = request.descriptor else { return .success(entry.bytes) }
            guard let triggers = entry.triggers else { return .failure(.unlikelyError) }
            return triggers.read(descriptor, encoding: entry.encoding)
        }
    }

    /// Checks the whole batch — trigger descriptors, then values — and applies all of it or none
    /// of it. A refused trigger descriptor answers its ESS error code (0x80, 0x81).
    private func write(_ batch: [GATTWriteRequest]) -> ATTErrorCode? {
        let descriptorWrites = batch.filter { $0.descriptor != nil }
        let checked = lock.withLock { _ -> Result<[UInt16: TriggerDescriptors], ESSWriteRejection> in
            do throws(ESSWriteRejection) { return .success(try checkTriggers(descriptorWrites)) } catch {
                return .failure(error)
            }
        }
        let updated: [UInt16: TriggerDescriptors]
        switch checked {
        case .success(let result):
            updated = result
        case .failure(let error):
            logger.info(
                "trigger descriptor write refused",
                metadata: [
                    "central": "\(batch[0].central)", "characteristic": "\(batch[0].characteristic.uuid)",
                    "reason": "\(error)"
                ])
            return ATTErrorCode(rawValue: error.code.rawValue)
        }
        let valueWrites = batch.filter { $0.descriptor == nil }
        if !valueWrites.isEmpty, let error = writeValues(valueWrites) { return error }
        guard !updated.isEmpty else { return nil }
        let changes = lock.withLock { _ in
            updated.keys.sorted().compactMap { handle -> TriggerChange? in
                guard let position = positions[handle] else { return nil }
                entries[position].triggers = updated[handle]
                return TriggerChange(
                    ref: entries[position].ref, central: batch[0].central, triggers: updated[handle]?.triggerSet)
            }
        }
        for change in changes { triggerContinuation.yield(change) }
        return nil
    }

    /// The trigger descriptors as the writes would leave them (a part written at an offset completes
    /// the current value). Call with `lock` held.
    private func checkTriggers(_ writes: [GATTWriteRequest]) throws(ESSWriteRejection) -> [UInt16: TriggerDescriptors] {
        var updated: [UInt16: TriggerDescriptors] = [:]
        for request in writes {
            let handle = request.characteristic.valueHandle
            guard let entry = entry(handle), let current = updated[handle] ?? entry.triggers,
                let descriptor = request.descriptor,
                case .success(let old) = current.read(descriptor, encoding: entry.encoding)
            else {
                throw ESSWriteRejection(.writeRequestRejected, "not a trigger descriptor")
            }
            guard request.offset <= old.count else {
                throw ESSWriteRejection(.writeRequestRejected, "offset \(request.offset) is past the value")
            }
            let bytes = Array(old.prefix(request.offset)) + request.value
            updated[handle] = try current.writing(bytes, to: descriptor, encoding: entry.encoding)
        }
        return updated
    }

    /// Checks every value of the batch against its characteristic's encoding (a part written at an
    /// offset completes the current value), then applies all of them, or none.
    private func writeValues(_ batch: [GATTWriteRequest]) -> ATTErrorCode? {
        let accepted: [(UInt16, CentralWrite)]
        do {
            accepted = try lock.withLock { _ in
                try batch.map { request throws(ATTErrorCode) -> (UInt16, CentralWrite) in
                    let handle = request.characteristic.valueHandle
                    guard let entry = entry(handle) else { throw .unlikelyError }
                    guard request.offset <= entry.bytes.count else { throw .invalidOffset }
                    let bytes = Array(entry.bytes.prefix(request.offset)) + request.value
                    let value: SensorValue
                    do throws(ValueError) {
                        value = try entry.encoding.decode(bytes)
                    } catch {
                        switch error {
                        case .wrongLength, .tooLong: throw .invalidAttributeValueLength
                        default: throw .valueNotAllowed
                        }
                    }
                    return (
                        handle,
                        CentralWrite(
                            ref: entry.ref, central: request.central, value: value, bytes: bytes,
                            kind: request.kind)
                    )
                }
            }
        } catch let error as ATTErrorCode {
            return error
        } catch {
            return .unlikelyError
        }
        lock.withLock { _ in
            for (handle, write) in accepted {
                if let position = positions[handle] { entries[position].bytes = write.bytes }
            }
        }
        for (_, write) in accepted { writeContinuation.yield(write) }
        return nil
    }
}

/// A central changed a characteristic's trigger descriptors: the triggers every subscribed central
/// now gets (nil: the configured policy).
public struct TriggerChange: Sendable, Equatable {
    public let ref: CharacteristicRef
    public let central: CentralID
    public let triggers: TriggerSet?
}

/// A value a central wrote and the server accepted.
public struct CentralWrite: Sendable, Equatable {
    public let ref: CharacteristicRef
    public let central: CentralID
    public let value: SensorValue
    public let bytes: [UInt8]
    /// The ATT write that carried it (for MQTT's `/written`).
    public let kind: GATTWriteKind
}
