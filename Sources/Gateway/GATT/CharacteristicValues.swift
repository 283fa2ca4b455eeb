import Synchronization
import BluetoothATT
import BluetoothGATT
import FoundationEssentials
import Glibc
import Logging
import Notify
import Values

/// The one store of each characteristic's current value: what reads get, what the notify engine
/// sends at a subscription and a tick, what the pipeline and `gattway status` see; and the check
/// of centrals' writes.
///
/// Every characteristic of the layout has its entry from the start, so values that arrive before
/// the services are published are kept here too; publishing only tells the store each one's value
/// handle. The GATT server's request handlers are synchronous and run inside the peripheral actor,
/// so they cannot await the pipeline actor: they read and write here, under a lock, and accepted
/// writes are handed to the pipeline as `CentralWrite`s through `writes`. Requests to a trigger
/// descriptor go to `TriggerSettings`.
final class CharacteristicValues: @unchecked Sendable {
    struct Entry {
        let ref: CharacteristicRef
        let encoding: ValueEncoding
        /// Nil until the characteristic has a value (a read gets no bytes then).
        var sample: NotifySample?
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

    /// An entry, without a value, for every characteristic of `layout`.
    init(layout: GATTLayout, logger: Logger) {
        self.logger = logger
        entries = layout.characteristics.keys.sorted().map { ref in
            Entry(ref: ref, encoding: layout.characteristics[ref]!.config.encoding, sample: nil)
        }
        positionsByRef = CharacteristicTable(entries.enumerated().lazy.map { ($1.ref, $0) })
        (writes, writeContinuation) = AsyncStream.makeStream(of: CentralWrite.self)
    }

    /// A reload's layout: an entry, without a value, for every characteristic of `layout`, except
    /// those in `kept` (their services stay published), which keep their value and value handle.
    /// The others are published anew (`register`).
    func relayout(_ layout: GATTLayout, keeping kept: Set<CharacteristicRef>) {
        lock.withLock { _ in
            let before = Dictionary(uniqueKeysWithValues: entries.map { ($0.ref, $0) })
            let handles = Dictionary(uniqueKeysWithValues: positionsByHandle.map { (entries[$1].ref, $0) })
            entries = layout.characteristics.keys.sorted().map { ref in
                if kept.contains(ref), let entry = before[ref] { return entry }
                return Entry(ref: ref, encoding: layout.characteristics[ref]!.config.encoding, sample: nil)
            }
            positionsByRef = CharacteristicTable(entries.enumerated().lazy.map { ($1.ref, $0) })
            positionsByHandle = [:]
            for ref in kept {
                if let handle = handles[ref], let position = positionsByRef[ref] { positionsByHandle[handle] = position }
            }
        }
    }

    /// `ref` is published at `valueHandle`. Its value stays.
    func register(_ ref: CharacteristicRef, valueHandle: UInt16) {
        guard let position = positionsByRef[ref] else { return }
        lock.withLock { _ in positionsByHandle[valueHandle] = position }
    }

    /// `ref`'s value is now `sample`.
    func set(_ sample: NotifySample, of ref: CharacteristicRef) {
        guard let position = positionsByRef[ref] else { return }
        lock.withLock { _ in entries[position].sample = sample }
    }

    /// `ref`'s current value; nil before it has one.
    func sample(of ref: CharacteristicRef) -> NotifySample? {
        guard let position = positionsByRef[ref] else { return nil }
        return lock.withLock { _ in entries[position].sample }
    }

    /// `ref`'s current value as its bytes on air; nil before it has one.
    func bytes(of ref: CharacteristicRef) -> [UInt8]? { sample(of: ref)?.bytes }

    /// The entry of a value handle. Call with `lock` held.
    private func entry(_ valueHandle: UInt16) -> Entry? {
        positionsByHandle[valueHandle].map { entries[$0] }
    }

    /// The GATT server's handlers: values here, trigger descriptors in `triggers`.
    func handlers(triggers: TriggerSettings) -> GATTRequestHandlers {
        GATTRequestHandlers(
            read: { [self] request in read(request, triggers: triggers) },
            write: { [self] batch in write(batch, triggers: triggers) })
    }

    private func read(_ request: GATTReadRequest, triggers: TriggerSettings) -> Result<[UInt8], ATTErrorCode> {
        guard let entry = lock.withLock({ _ in self.entry(request.characteristic.valueHandle) }) else {
            return .failure(.unlikelyError)
        }
        guard let descriptor = request.descriptor else { return .success(entry.sample?.bytes ?? []) }
        return triggers.read(descriptor, of: entry.ref)
    }

    /// Checks the whole batch — trigger descriptors, then values — and applies all of it or none
    /// of it. A refused trigger descriptor answers its ESS error code (0x80, 0x81).
    private func write(_ batch: [GATTWriteRequest], triggers: TriggerSettings) -> ATTErrorCode? {
        let descriptorRequests = batch.filter { $0.descriptor != nil }
        let descriptorWrites = lock.withLock { _ -> [(CharacteristicRef, GATTWriteRequest)] in
            descriptorRequests.compactMap { request in entry(request.characteristic.valueHandle).map { ($0.ref, request) } }
        }
        let checked: TriggerWrites
        do throws(ESSWriteRejection) {
            guard descriptorWrites.count == descriptorRequests.count else {
                throw ESSWriteRejection(.writeRequestRejected, "not a trigger descriptor")
            }
            checked = try triggers.check(descriptorWrites)
        } catch {
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
        triggers.apply(checked, by: batch[0].central)
        return nil
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
                    let current = entry.sample?.bytes ?? []
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
                if let position = positionsByHandle[handle] {
                    entries[position].sample = NotifySample(value: write.value, bytes: write.bytes)
                }
            }
        }
        for (_, write) in accepted { writeContinuation.yield(write) }
        return nil
    }
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
