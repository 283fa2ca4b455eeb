import Synchronization
import BluetoothATT
import BluetoothGATT
import FoundationEssentials
import Glibc
import Logging
import Notify
import Values

/// The one store of each characteristic's current value (the bytes reads get, what the pipeline
/// and `gattway status` see), with its trigger descriptors, and the check of centrals' writes.
///
/// Every characteristic of the layout has its entry from the start, so values that arrive before
/// the services are published are kept here too; publishing only tells the store each one's value
/// handle. The GATT server's request handlers are synchronous and run inside the peripheral actor,
/// so they cannot await the pipeline actor: they read and write here, under a lock, and accepted
/// writes are handed to the pipeline as `CentralWrite`s through `writes`, accepted trigger
/// descriptor writes as `TriggerChange`s through `triggerChanges`.
final class CharacteristicValues: @unchecked Sendable {
    struct Entry {
        let ref: CharacteristicRef
        let encoding: ValueEncoding
        /// Nil until the characteristic has a value (a read gets no bytes then).
        var bytes: [UInt8]?
        /// The ESS trigger descriptors, when the characteristic has them.
        var triggers: TriggerDescriptors?
    }

    private let lock = Mutex(())
    private let logger: Logger
    // Guarded by `lock`. An array with the positions of refs and value handles beside it, not a
    // dictionary of entries: a value set in a dictionary goes through its modify accessors, which
    // here cost three heap allocations per sensor value; an array element is changed in place.
    private var entries: [Entry]
    /// Changed only by a reload's layout (`relayout`), on the event loop where every caller runs.
    private var positionsByRef: CharacteristicTable<Int>
    private var positionsByHandle: [UInt16: Int] = [:]
    private let writeContinuation: AsyncStream<CentralWrite>.Continuation
    let writes: AsyncStream<CentralWrite>
    private let triggerContinuation: AsyncStream<TriggerChange>.Continuation
    let triggerChanges: AsyncStream<TriggerChange>
    /// The layout's characteristics, for the trigger settings' checks. Guarded by `lock`.
    private var layout: GATTLayout
    /// The trigger settings centrals wrote, by characteristic path, as `TriggerFile` keeps them:
    /// restored when their characteristic is published (`register`), as long as it has the UUID
    /// and format they were written for. Guarded by `lock`.
    var savedTriggers: [String: SavedTriggers] { lock.withLock { _ in saved } }
    private var saved: [String: SavedTriggers]
    /// Restored by `register`, for the pipeline's notify engine (`takeRestoredTriggers`), and the
    /// saved settings that no longer fit (`takeForgottenTriggers`). Guarded by `lock`.
    private var restored: [CharacteristicRef: TriggerSet] = [:]
    private var forgotten: [String] = []

    /// An entry, without a value, for every characteristic of `layout`; `savedTriggers`: the
    /// trigger settings written before a restart.
    init(layout: GATTLayout, savedTriggers: [String: SavedTriggers] = [:], logger: Logger) {
        self.logger = logger
        self.layout = layout
        saved = savedTriggers
        entries = layout.characteristics.keys.sorted().map { ref in
            Entry(ref: ref, encoding: layout.characteristics[ref]!.config.encoding, bytes: nil, triggers: nil)
        }
        positionsByRef = CharacteristicTable(entries.enumerated().lazy.map { ($1.ref, $0) })
        (writes, writeContinuation) = AsyncStream.makeStream(of: CentralWrite.self)
        (triggerChanges, triggerContinuation) = AsyncStream.makeStream(of: TriggerChange.self)
    }

    /// A reload's layout: an entry, without a value, for every characteristic of `layout`, except
    /// those in `kept` (their services stay published), which keep their value, value handle and
    /// trigger descriptors. The others are published anew (`register`).
    func relayout(_ layout: GATTLayout, keeping kept: Set<CharacteristicRef>) {
        lock.withLock { _ in
            self.layout = layout
            let before = Dictionary(uniqueKeysWithValues: entries.map { ($0.ref, $0) })
            let handles = Dictionary(uniqueKeysWithValues: positionsByHandle.map { (entries[$1].ref, $0) })
            entries = layout.characteristics.keys.sorted().map { ref in
                if kept.contains(ref), let entry = before[ref] { return entry }
                return Entry(ref: ref, encoding: layout.characteristics[ref]!.config.encoding, bytes: nil, triggers: nil)
            }
            positionsByRef = CharacteristicTable(entries.enumerated().lazy.map { ($1.ref, $0) })
            positionsByHandle = [:]
            for ref in kept {
                if let handle = handles[ref], let position = positionsByRef[ref] { positionsByHandle[handle] = position }
            }
        }
    }

    /// `ref` is published at `valueHandle`; `triggerPosition`: where its trigger descriptors start
    /// in its descriptor list, when it has them. Its value stays.
    func register(_ ref: CharacteristicRef, valueHandle: UInt16, triggerPosition: Int?) {
        guard let position = positionsByRef[ref] else { return }
        lock.withLock { _ in
            positionsByHandle[valueHandle] = position
            entries[position].triggers = triggerPosition.map { first in
                restoredTriggers(of: ref, at: first) ?? TriggerDescriptors(firstPosition: first)
            }
        }
    }

    /// `ref`'s saved trigger settings, when it has some that fit it. Call with `lock` held.
    private func restoredTriggers(of ref: CharacteristicRef, at firstPosition: Int) -> TriggerDescriptors? {
        guard let savedTriggers = saved[ref.path], let config = layout.characteristics[ref]?.config else { return nil }
        do throws(ESSWriteRejection) {
            guard savedTriggers.fits(config) else {
                throw ESSWriteRejection(
                    .writeRequestRejected,
                    "written for \(savedTriggers.uuid) in \(savedTriggers.format), not for this characteristic")
            }
            let triggers = try TriggerDescriptors(
                firstPosition: firstPosition, restoring: savedTriggers, encoding: config.encoding)
            restored[ref] = triggers.triggerSet
            return triggers
        } catch {
            saved[ref.path] = nil
            forgotten.append("\(ref.path): \(error.reason)")
            return nil
        }
    }

    /// The trigger settings `register` restored since the last call, for the notify engine.
    func takeRestoredTriggers() -> [CharacteristicRef: TriggerSet] {
        lock.withLock { _ in
            defer { restored = [:] }
            return restored
        }
    }

    /// The saved trigger settings `register` found no longer fit their characteristic (a
    /// changed format or UUID), with why, since the last call.
    func takeForgottenTriggers() -> [String] {
        lock.withLock { _ in
            defer { forgotten = [] }
            return forgotten
        }
    }

    /// `ref`'s value is now `bytes`.
    func set(_ bytes: [UInt8], of ref: CharacteristicRef) {
        guard let position = positionsByRef[ref] else { return }
        lock.withLock { _ in entries[position].bytes = bytes }
    }

    /// `ref`'s current value; nil before it has one.
    func bytes(of ref: CharacteristicRef) -> [UInt8]? {
        guard let position = positionsByRef[ref] else { return nil }
        return lock.withLock { _ in entries[position].bytes }
    }

    /// The entry of a value handle. Call with `lock` held.
    private func entry(_ valueHandle: UInt16) -> Entry? {
        positionsByHandle[valueHandle].map { entries[$0] }
    }

    var handlers: GATTRequestHandlers {
        GATTRequestHandlers(read: { [self] request in read(request) }, write: { [self] batch in write(batch) })
    }

    private func read(_ request: GATTReadRequest) -> Result<[UInt8], ATTErrorCode> {
        lock.withLock { _ in
            guard let entry = entry(request.characteristic.valueHandle) else { return .failure(.unlikelyError) }
            guard let descriptor = request.descriptor else { return .success(entry.bytes ?? []) }
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
                guard let position = positionsByHandle[handle] else { return nil }
                entries[position].triggers = updated[handle]
                if let triggers = updated[handle], let config = layout.characteristics[entries[position].ref]?.config {
                    saved[entries[position].ref.path] = SavedTriggers(triggers, of: config)
                }
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
                    let current = entry.bytes ?? []
                    guard request.offset <= current.count else { throw .invalidOffset }
                    let bytes = Array(current.prefix(request.offset)) + request.value
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
                if let position = positionsByHandle[handle] { entries[position].bytes = write.bytes }
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
