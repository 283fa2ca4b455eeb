import BluetoothGATT
import EventLoop
import Logging
import LoopClock
import Notify

/// Drives the `NotifyEngine` for the gateway: subscriptions, values and the triggers centrals
/// wrote go in, and every transmission the engine hands out goes to `send`, the link's side.
/// Owned by the `ValuePipeline` and used only on its executor, the event loop. The current values
/// are `values`' (the store reads are served from): the engine is handed the one it needs at a
/// subscription and at its deadlines.
///
/// Backpressure: when `send` returns false the link is full; the transmission goes back to the
/// engine's slot for its subscription (unless a newer value took it meanwhile), which keeps only
/// the newest value, and nothing more is taken for that central until `linkReady()`. Others are
/// still served, so a stalled central delays nobody else. Time: one `DeadlineTimer`, scheduled for
/// the engine's `nextDeadline` after every drain; its owner calls `advance()` when it fires.
///
/// Triggers: a central's accepted write to an ESS characteristic's trigger descriptors becomes
/// the triggers of every central subscribed to it (`setTriggers`), and of those subscribing later
/// (`triggers`, asked at each subscription).
final class NotifyDriver {
    typealias Send = (Transmission<CentralID, CharacteristicRef>) throws -> Bool

    private var engine = NotifyEngine<CentralID, CharacteristicRef>()
    private let send: Send
    private let values: CharacteristicValues
    /// A characteristic's triggers written by centrals (`TriggerSettings`), for a new subscriber.
    private let triggers: (CharacteristicRef) -> TriggerSet?
    private let timer: DeadlineTimer?
    /// The engine's time: a deadline is the same moment every time it is scheduled, so one that
    /// has not moved never re-arms the timer.
    private let clock: @Sendable () -> LoopInstant
    private let logger: Logger
    /// Centrals whose `send` returned false since the last `linkReady()`.
    private var fullCentrals: Set<CentralID> = []
    /// The centrals `drain()` serves, kept between drains so that one allocates nothing.
    private var pendingCentrals: [CentralID] = []

    /// `timer`: scheduled for the engine's deadlines; nil leaves time to the caller's `advance()`
    /// (tests, with a manual clock). `send`: puts one update on the link, false when it is full.
    init(
        policies: [CharacteristicRef: NotifyPolicy], values: CharacteristicValues,
        triggers: @escaping (CharacteristicRef) -> TriggerSet?,
        timer: DeadlineTimer?,
        clock: @escaping @Sendable () -> LoopInstant, logger: Logger, send: @escaping Send
    ) {
        for (ref, policy) in policies { engine.configure(ref, policy: policy) }
        self.values = values
        self.triggers = triggers
        self.timer = timer
        self.clock = clock
        self.logger = logger
        self.send = send
    }

    private var now: LoopInstant { clock() }

    /// The per-characteristic and per-central counters.
    var statistics: NotifyStatistics<CentralID, CharacteristicRef> { engine.statistics }

    /// When the engine next has work.
    var nextDeadline: LoopInstant? { engine.nextDeadline }

    // MARK: Inputs (each followed by `drain()` when its owner is done)

    /// Every subscriber's policy on `ref` from its next value on.
    func configure(_ ref: CharacteristicRef, policy: NotifyPolicy) {
        engine.configure(ref, policy: policy)
    }

    /// `ref`'s new value, judged for every subscriber (the pipeline puts it in `values` after
    /// this call: the engine reads no current value here).
    func update(_ ref: CharacteristicRef, sample: NotifySample) {
        engine.update(ref, sample: sample, now: now)
    }

    /// `ref`'s value is no longer current: no heartbeat resends it until `update`.
    func markStale(_ ref: CharacteristicRef) {
        engine.markStale(ref)
    }

    /// The characteristic's triggers come first: they judge the current value the subscription
    /// may start with.
    func subscribe(_ central: CentralID, to ref: CharacteristicRef, kind: UpdateKind) {
        if let triggers = triggers(ref) { engine.setTriggers(triggers, for: central, on: ref, now: now) }
        engine.subscribe(central, to: ref, kind: kind, current: values.sample(of: ref), now: now)
    }

    func unsubscribe(_ central: CentralID, from ref: CharacteristicRef) {
        engine.unsubscribe(central, from: ref)
    }

    func disconnect(_ central: CentralID) {
        engine.disconnect(central)
        fullCentrals.remove(central)
    }

    /// A characteristic a reload no longer serves: its subscriptions, policy, triggers and
    /// counters are forgotten.
    func forget(_ ref: CharacteristicRef) {
        engine.remove(ref)
    }

    /// The link has room again (`readyToUpdateSubscribers`): every central is tried again.
    func linkReady() {
        fullCentrals = []
    }

    /// `ref`'s triggers (nil: the configured policy) for every central subscribed to it now
    /// (`triggers` has them for those subscribing later).
    func setTriggers(_ triggers: TriggerSet?, on ref: CharacteristicRef) {
        for central in engine.subscribers(of: ref).sorted() {
            engine.setTriggers(triggers, for: central, on: ref, now: now)
        }
    }

    /// Handles the engine's deadlines up to now, then drains.
    func advance() {
        engine.advance(to: now) { [values] in values.sample(of: $0) }
        drain()
    }

    /// Stops the timer: nothing is scheduled any more.
    func stop() {
        timer?.cancel()
    }

    // MARK: The link

    /// Hands waiting values to `send` until the link is full or nothing waits, then schedules the
    /// timer for the engine's next deadline. Synchronous, so nothing else runs in between.
    func drain() {
        // Nobody subscribed (a gateway nobody is connected to, most of the time): nothing to hand
        // out and no deadline to find, so neither is asked for, after every value.
        guard engine.hasSubscriptions else {
            timer?.schedule(at: nil)
            return
        }
        engine.collectCentralsWithPendingTransmissions(into: &pendingCentrals)
        // Sorting none or one still pays the sort's setup, on every value.
        if pendingCentrals.count > 1 { pendingCentrals.sort() }
        // By index: iterating the property retained its array, for every value.
        for index in pendingCentrals.indices {
            let central = pendingCentrals[index]
            while !isFull(central), let transmission = engine.nextTransmission(for: central) {
                guard transmit(transmission) else { break }
            }
        }
        timer?.schedule(at: engine.nextDeadlineInPlace())
    }

    /// Usually none is full, and a look into an empty set still hashes.
    private func isFull(_ central: CentralID) -> Bool {
        !fullCentrals.isEmpty && fullCentrals.contains(central)
    }

    /// Sends one update; false (the central is full, and the update goes back to the engine's
    /// slot, where a newer value replaces it) when the link has no room for it. Consuming: the
    /// caller's optional binding, destroyed there, went through the optional's value witnesses
    /// (about 190 instructions per notification).
    private func transmit(_ transmission: consuming Transmission<CentralID, CharacteristicRef>) -> Bool {
        do {
            if try !send(transmission) {
                fullCentrals.insert(transmission.central)
                engine.transmissionRefused(transmission)
                return false
            }
        } catch {
            logger.warning(
                "update not sent",
                metadata: [
                    "characteristic": "\(transmission.characteristic)",
                    "central": "\(transmission.central)", "error": "\(error)"
                ])
        }
        // The GATT server queues indications per central behind the unconfirmed one (bounded),
        // so the engine may hand out the next.
        if transmission.kind == .indication { engine.indicationConfirmed(by: transmission.central) }
        return true
    }
}
