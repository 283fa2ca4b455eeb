import BluetoothATT
import BluetoothGATT
import EventLoop
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
/// handle. Its callers all run on the event loop: the `ValuePipeline` (the status command asks it
/// there) and the GATT server's request handlers, which are synchronous and run inside the
/// peripheral actor and must not call back into it: they read and write here, and accepted
/// writes wait here as `CentralWrite`s until the peripheral has answered them and calls the
/// handlers' `applied`, where the pipeline takes them (`takeAcceptedWrites`). So the store is
/// loop-bound (`LoopBound`), not locked. Requests to a trigger descriptor go to `TriggerSettings`.
final class CharacteristicValues: Sendable {
    struct Entry {
        let ref: CharacteristicRef
        let encoding: ValueEncoding
        /// Nil until the characteristic has a value (a read gets no bytes then).
        var sample: NotifySample?
    }

    /// An array with the positions of refs and value handles beside it, not a dictionary of
    /// entries: a value set in a dictionary goes through its modify accessors, which here cost
    /// three heap allocations per sensor value; an array element is changed in place.
    private struct Store {
        var entries: [Entry]
        /// Changed only by a reload's layout (`relayout`).
        var positionsByRef: CharacteristicTable<Int>
        var positionsByHandle: [UInt16: Int] = [:]
        /// Writes applied during the request the peripheral is answering, for `applied`.
        var acceptedWrites: [CentralWrite] = []

        init(entries: [Entry]) {
            self.entries = entries
            positionsByRef = CharacteristicTable(entries.enumerated().lazy.map { ($1.ref, $0) })
        }

        /// The entry of a value handle.
        func entry(_ valueHandle: UInt16) -> Entry? {
            positionsByHandle[valueHandle].map { entries[$0] }
        }
    }

    private let logger: Logger
    private let store: LoopBound<Store>

    /// An entry for every characteristic of `layout`, with its value in `samples` (the configured
    /// ones) or without one. On any thread: nothing else has the store yet.
    init(layout: GATTLayout, samples: [CharacteristicRef: NotifySample] = [:], logger: Logger) {
        self.logger = logger
        store = LoopBound(
            Store(
                entries: layout.characteristics.keys.sorted().map { ref in
                    Entry(ref: ref, encoding: layout.characteristics[ref]!.config.encoding, sample: samples[ref])
                }))
    }

    /// A reload's layout: an entry, without a value, for every characteristic of `layout`, except
    /// those in `kept` (their services stay published), which keep their value and value handle.
    /// The others are published anew (`register`).
    func relayout(_ layout: GATTLayout, keeping kept: Set<CharacteristicRef>) {
        let old = store.value
        let before = Dictionary(uniqueKeysWithValues: old.entries.map { ($0.ref, $0) })
        let handles = Dictionary(uniqueKeysWithValues: old.positionsByHandle.map { (old.entries[$1].ref, $0) })
        var new = Store(
            entries: layout.characteristics.keys.sorted().map { ref in
                if kept.contains(ref), let entry = before[ref] { return entry }
                return Entry(ref: ref, encoding: layout.characteristics[ref]!.config.encoding, sample: nil)
            })
        for ref in kept {
            if let handle = handles[ref], let position = new.positionsByRef[ref] { new.positionsByHandle[handle] = position }
        }
        store.value = new
    }

    /// `ref` is published at `valueHandle`. Its value stays.
    func register(_ ref: CharacteristicRef, valueHandle: UInt16) {
        guard let position = store.value.positionsByRef[ref] else { return }
        store.value.positionsByHandle[valueHandle] = position
    }

    /// `ref`'s value is now `sample`.
    func set(_ sample: consuming NotifySample, of ref: CharacteristicRef) {
        guard let position = store.value.positionsByRef[ref] else { return }
        store.value.entries[position].sample = sample
    }

    /// `ref`'s current value; nil before it has one.
    func sample(of ref: CharacteristicRef) -> NotifySample? {
        guard let position = store.value.positionsByRef[ref] else { return nil }
        return store.value.entries[position].sample
    }

    /// `ref`'s current value as its bytes on air; nil before it has one.
    func bytes(of ref: CharacteristicRef) -> [UInt8]? { sample(of: ref)?.bytes }

    /// The GATT server's handlers: values here, trigger descriptors in `triggers`; `applied`
    /// once the peripheral has answered a request whose writes were applied.
    func handlers(triggers: TriggerSettings, applied: @escaping @Sendable () -> Void) -> GATTRequestHandlers {
        GATTRequestHandlers(
            read: { [self] request in read(request, triggers: triggers) },
            write: { [self] batch in write(batch, triggers: triggers) },
            applied: applied)
    }

    /// The writes applied since the last call, in order.
    func takeAcceptedWrites() -> [CentralWrite] {
        guard !store.value.acceptedWrites.isEmpty else { return [] }
        defer { store.value.acceptedWrites.removeAll() }
        return store.value.acceptedWrites
    }

    private func read(_ request: GATTReadRequest, triggers: TriggerSettings) -> Result<[UInt8], ATTErrorCode> {
        guard let entry = store.value.entry(request.characteristic.valueHandle) else {
            return .failure(.unlikelyError)
        }
        guard let descriptor = request.descriptor else { return .success(entry.sample?.bytes ?? []) }
        return triggers.read(descriptor, of: entry.ref)
    }

    /// Checks the whole batch — trigger descriptors, then values — and applies all of it or none
    /// of it. A refused trigger descriptor answers its ESS error code (0x80, 0x81).
    private func write(_ batch: [GATTWriteRequest], triggers: TriggerSettings) -> ATTErrorCode? {
        let descriptorRequests = batch.filter { $0.descriptor != nil }
        let descriptorWrites = descriptorRequests.compactMap { request in
            store.value.entry(request.characteristic.valueHandle).map { ($0.ref, request) }
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
        do throws(ATTErrorCode) {
            accepted = try batch.map { request throws(ATTErrorCode) -> (UInt16, CentralWrite) in
                let handle = request.characteristic.valueHandle
                guard let entry = store.value.entry(handle) else { throw .unlikelyError }
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
                        ref: entry.ref, central: request.central, value: value, bytes: bytes, kind: request.kind)
                )
            }
        } catch {
            return error
        }
        for (handle, write) in accepted {
            if let position = store.value.positionsByHandle[handle] {
                store.value.entries[position].sample = NotifySample(value: write.value, bytes: write.bytes)
            }
        }
        store.value.acceptedWrites += accepted.map(\.1)
        return nil
    }
}

/// A value a central wrote and the server accepted.
struct CentralWrite: Sendable, Equatable {
    let ref: CharacteristicRef
    let central: CentralID
    let value: SensorValue
    let bytes: [UInt8]
    /// The ATT write that carried it (for MQTT's `/written`).
    let kind: GATTWriteKind
}
