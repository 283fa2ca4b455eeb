import BluetoothATT
import BluetoothGATT
import EventLoop
import Logging
import Notify
import Values

/// The ESS trigger settings centrals write: each notifying ESS characteristic's trigger
/// descriptors (`TriggerDescriptors`), their reads and checked writes, `es-triggers.json`
/// (`TriggerFile`: loaded once, written anew through the state files' writer after each change,
/// so the loop never waits on the disk) and the restoration of what it kept when a characteristic
/// is published. The notify driver asks it a characteristic's triggers when a central subscribes
/// (`triggerSet(of:)`), and hears of each accepted change from the pipeline, which takes them
/// (`takeChanges`) once the peripheral has answered the write.
///
/// Its callers all run on the event loop, as `CharacteristicValues`' do: the GATT server's request
/// handlers (inside the peripheral actor), and the pipeline with its publication and notify driver.
/// So the state is loop-bound (`LoopBound`), not locked.
final class TriggerSettings: Sendable {
    private struct State {
        /// The layout's characteristics, for the saved settings' checks.
        var layout: GATTLayout
        /// The descriptors of each published characteristic that has them.
        var descriptors: [CharacteristicRef: TriggerDescriptors] = [:]
        /// What `file` keeps: the settings centrals wrote, by characteristic path, restored
        /// when their characteristic is published with the UUID and format they were written for.
        var saved: [String: SavedTriggers]
        /// Changes applied during the request the peripheral is answering, for `takeChanges`.
        var changes: [TriggerChange] = []
    }

    private let state: LoopBound<State>
    private let file: TriggerFile?
    private let logger: Logger

    /// `file`: where the settings are kept across restarts (nil: for this run only); one that
    /// cannot be read is logged and forgotten, and the configured policies govern. On any thread:
    /// nothing else has the state yet.
    init(layout: GATTLayout, file: TriggerFile?, logger: Logger) {
        var saved: [String: SavedTriggers] = [:]
        do {
            saved = try file?.load() ?? [:]
        } catch {
            logger.warning("\(error): the trigger settings written before are forgotten, the configured policies govern")
        }
        state = LoopBound(State(layout: layout, saved: saved))
        self.file = file
        self.logger = logger
    }

    /// The triggers every central subscribing to `ref` gets; nil while the configured policy
    /// governs.
    func triggerSet(of ref: CharacteristicRef) -> TriggerSet? {
        state.value.descriptors[ref]?.triggerSet
    }

    // MARK: Publishing

    /// `ref` is published with its trigger descriptors from `firstPosition` in its descriptor
    /// list: they start as the saved settings when those fit it, else as the configured policy.
    /// Saved settings that no longer fit (a changed format or UUID) are forgotten, and the file
    /// is saved without them.
    func register(_ ref: CharacteristicRef, firstPosition: Int) {
        guard let saved = state.value.saved[ref.path], let config = state.value.layout.characteristics[ref]?.config else {
            state.value.descriptors[ref] = TriggerDescriptors(firstPosition: firstPosition)
            return
        }
        do throws(ESSWriteRejection) {
            guard saved.fits(config) else {
                throw ESSWriteRejection(
                    .writeRequestRejected, "written for \(saved.uuid) in \(saved.format), not for this characteristic")
            }
            let descriptors = try TriggerDescriptors(
                firstPosition: firstPosition, restoring: saved, encoding: config.encoding)
            state.value.descriptors[ref] = descriptors
            logger.info(
                "notify triggers restored",
                metadata: [
                    "characteristic": "\(ref)",
                    "triggers": "\(descriptors.settings) \(descriptors.logic)"
                ])
        } catch {
            logger.warning(
                "saved notify triggers forgotten: \(ref.path): \(error.reason); the configured policy governs")
            state.value.descriptors[ref] = TriggerDescriptors(firstPosition: firstPosition)
            state.value.saved[ref.path] = nil
            save(state.value.saved)
        }
    }

    /// A reload's layout: the descriptors of the characteristics in `kept` (their services stay
    /// published) stay as they are; the others are registered anew when published.
    func relayout(_ layout: GATTLayout, keeping kept: Set<CharacteristicRef>) {
        state.value.layout = layout
        state.value.descriptors = state.value.descriptors.filter { kept.contains($0.key) }
    }

    // MARK: Requests (from the GATT server's handlers)

    /// The value a read of `ref`'s `descriptor` returns.
    func read(_ descriptor: PublishedDescriptor, of ref: CharacteristicRef) -> Result<[UInt8], ATTErrorCode> {
        guard let descriptors = state.value.descriptors[ref],
            let encoding = state.value.layout.characteristics[ref]?.config.encoding
        else { return .failure(.unlikelyError) }
        return descriptors.read(descriptor, encoding: encoding)
    }

    /// The descriptors as `writes` (each to a descriptor of its characteristic) would leave them,
    /// a part written at an offset completing the current value; nothing changes until `apply`.
    func check(_ writes: [(CharacteristicRef, GATTWriteRequest)]) throws(ESSWriteRejection) -> TriggerWrites {
        var updated: [CharacteristicRef: TriggerDescriptors] = [:]
        for (ref, request) in writes {
            guard let current = updated[ref] ?? state.value.descriptors[ref],
                let encoding = state.value.layout.characteristics[ref]?.config.encoding,
                let descriptor = request.descriptor,
                case .success(let old) = current.read(descriptor, encoding: encoding)
            else {
                throw ESSWriteRejection(.writeRequestRejected, "not a trigger descriptor")
            }
            guard request.offset <= old.count else {
                throw ESSWriteRejection(.writeRequestRejected, "offset \(request.offset) is past the value")
            }
            let bytes = Array(old.prefix(request.offset)) + request.value
            updated[ref] = try current.writing(bytes, to: descriptor, encoding: encoding)
        }
        return TriggerWrites(descriptors: updated)
    }

    /// Applies checked writes of `central`: they govern every central subscribed to their
    /// characteristic (`changes`), and the file is saved with them.
    func apply(_ writes: TriggerWrites, by central: CentralID) {
        guard !writes.descriptors.isEmpty else { return }
        let changes = writes.descriptors.sorted { $0.key < $1.key }.compactMap { ref, descriptors -> TriggerChange? in
            // A reload may have removed it since the check.
            guard state.value.descriptors[ref] != nil, let config = state.value.layout.characteristics[ref]?.config else {
                return nil
            }
            state.value.descriptors[ref] = descriptors
            state.value.saved[ref.path] = SavedTriggers(descriptors, of: config)
            return TriggerChange(ref: ref, central: central, triggers: descriptors.triggerSet)
        }
        save(state.value.saved)
        state.value.changes += changes
        for change in changes {
            logger.info(
                "notify triggers changed",
                metadata: [
                    "characteristic": "\(change.ref)", "central": "\(change.central)",
                    "triggers": "\(change.triggers.map { "\($0.settings) \($0.logic)" } ?? "the configured policy")"
                ])
        }
    }

    /// The changes applied since the last call, in order.
    func takeChanges() -> [TriggerChange] {
        guard !state.value.changes.isEmpty else { return [] }
        defer { state.value.changes.removeAll() }
        return state.value.changes
    }

    /// Hands `saved` to the file's writer (on the loop, so the writes queue in the order of the
    /// changes); a failure is logged, and the settings govern until gattway stops.
    private func save(_ saved: [String: SavedTriggers]) {
        file?.save(saved) { [logger] error in
            if let error { logger.warning("notify triggers not saved: \(error); they apply until gattway stops") }
        }
    }
}

/// Trigger descriptor writes checked by `TriggerSettings.check`, to apply with the batch's
/// values.
struct TriggerWrites {
    fileprivate let descriptors: [CharacteristicRef: TriggerDescriptors]
}

/// A central changed a characteristic's trigger descriptors: the triggers every subscribed central
/// now gets (nil: the configured policy).
struct TriggerChange: Sendable, Equatable {
    let ref: CharacteristicRef
    let central: CentralID
    let triggers: TriggerSet?
}
