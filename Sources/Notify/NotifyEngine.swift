import LoopClock
import Values

/// Notification or indication: what the central enabled in its CCCD.
public enum UpdateKind: Sendable, Hashable {
    case notification
    case indication
}

/// One update for the driver to put on the link.
public struct Transmission<Central: Hashable & Sendable, Characteristic: Hashable & Sendable>: Sendable, Hashable {
    public let central: Central
    public let characteristic: Characteristic
    public let kind: UpdateKind
    public let sample: NotifySample
}

/// The notify policy engine: decides, per (central, characteristic), which values go out and
/// when, and holds what waits for the link. Pure and deterministic: time is a moment on the
/// loop's clock (`LoopInstant`), passed in with every call; nothing sleeps or reads a clock.
/// The current values are not kept here: they are the caller's (one store, which reads are
/// served from too), handed in where the engine needs one — the new value at `update`, the
/// current one at `subscribe` and at the deadlines of `advance`.
///
/// Two stages:
/// 1. Policy. Every new value (`update`), every deadline (`advance`) and, under the policy's
///    `currentValueOnSubscribe`, the current value at a `subscribe` is judged by the central's
///    policy or triggers. A value that may go now is *emitted* into the subscription's
///    outbound slot; one that must wait for an interval is *held* and judged again (the newest
///    value) when the interval expires.
/// 2. Link. The outbound slot holds one value, the newest: emitting into a full slot replaces
///    the older value (counted as coalesced). The driver takes values with
///    `nextTransmission(for:now:)` whenever that central's link has room, so a stalled central
///    keeps exactly one value per characteristic and delays no other central.
///
/// The driver's loop: after any call, drain `nextTransmission(for:)` for centrals with link
/// credit, then arm one timer for `nextDeadline` and call `advance(to:)` when it fires.
public struct NotifyEngine<Central: Hashable & Sendable, Characteristic: Hashable & Sendable>: Sendable {
    /// Its equality and hash are inlinable so that the module specializing the engine (the
    /// gateway's) also specializes the override and trigger tables keyed by it: with the derived
    /// conformance, every lookup went through a protocol witness that instantiated this generic
    /// type's metadata at run time.
    @usableFromInline
    struct Key: Hashable, Sendable {
        @usableFromInline let central: Central
        @usableFromInline let characteristic: Characteristic

        @usableFromInline
        init(central: Central, characteristic: Characteristic) {
            self.central = central
            self.characteristic = characteristic
        }

        @inlinable
        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.central == rhs.central && lhs.characteristic == rhs.characteristic
        }

        @inlinable
        func hash(into hasher: inout Hasher) {
            hasher.combine(central)
            hasher.combine(characteristic)
        }
    }

    struct CharacteristicState: Sendable {
        let characteristic: Characteristic
        var policy = NotifyPolicy.immediate
        /// The characteristic has had a value (`update`): its deadlines begin.
        var hasValue = false
        /// Its value is no longer current (its source stopped giving readings): no heartbeat or
        /// fixed-interval tick resends it, and no new subscription is offered it, until a new
        /// value comes.
        var isStale = false
        /// One per subscribed central. A list, not a table keyed by central: a characteristic has
        /// a handful of subscribers, and every value walks them all.
        var subscriptions: [Subscription] = []
        /// Nil until a counter of the characteristic changes: only those counted are reported.
        var counters: NotifyCounters?

        /// In place: the optional copied out, changed and stored back was a copy each way.
        mutating func count(_ counter: NotifyCounters.Counter, by amount: Int) {
            if counters == nil { counters = NotifyCounters() }
            counters!.add(amount, to: counter)
        }
    }

    /// A central with a subscription, kept until it disconnects.
    struct CentralState: Sendable {
        let central: Central
        var counters = NotifyCounters()
        /// The characteristics (their places in `characteristics`) whose slot holds a value for
        /// it, oldest first (each at most once).
        var ready: [Int] = []
        /// An indication was handed out and is not yet confirmed.
        var indicationOutstanding = false
    }

    struct TriggerState: Sendable {
        let triggers: TriggerSet
        /// Fixed time intervals tick at origin + k × interval.
        let origin: LoopInstant
    }

    struct Subscription: Sendable {
        let central: Central
        let kind: UpdateKind
        /// The last value emitted (what the central has, or will get from the slot).
        var lastEmitted: NotifySample?
        /// When the last value was emitted, or when the subscription began (heartbeat origin).
        var lastEmittedAt: LoopInstant
        /// Whether the newest value waits for an interval; judged again at `retryAt`.
        var retryAt: LoopInstant?
        /// Ticks up to this time are handled.
        var ticksHandledUntil: LoopInstant
        /// The value waiting for the link.
        var outbound: NotifySample?
        /// Subscription order: breaks ties between equal deadlines, so runs are reproducible.
        let sequence: Int

        /// `sample` goes into the outbound slot and counts as emitted at `now`; true when it
        /// replaced a value still waiting there.
        mutating func emit(_ sample: NotifySample, now: LoopInstant) -> Bool {
            let replaced = outbound != nil
            outbound = sample
            lastEmitted = sample
            lastEmittedAt = now
            retryAt = nil
            return replaced
        }
    }

    /// Where a subscription is: its characteristic's place in `characteristics` and its place in
    /// that characteristic's list. Valid until a characteristic or a subscription is removed.
    struct Position {
        let state: Int
        let slot: Int
    }

    /// Every characteristic configured, subscribed to or given a value, in no particular order,
    /// each at its place in `characteristicPlaces`. A list, so that what a value and its
    /// transmission touch is reached in place by position, not looked up again by key.
    private var characteristics: [CharacteristicState] = []
    private var characteristicPlaces: [Characteristic: Int] = [:]
    /// A list searched by central, not a table keyed by it: there are a handful of centrals, and
    /// every value emitted and sent looked its central up, each time hashing it.
    private var centrals: [CentralState] = []
    private var overrides: [Key: NotifyPolicy] = [:]
    private var triggers: [Key: TriggerState] = [:]
    /// Characteristics whose policy has a heartbeat (`maxInterval`): without these, triggers and
    /// overrides, only held values have deadlines, and finding the next one computes no ticks.
    private var characteristicsWithHeartbeat: Set<Characteristic> = []
    /// The next subscription's `sequence`: every subscription made gets the next number.
    private var subscriptionsMade = 0
    /// The subscriptions there are now. With none (a gateway nobody is connected to, most of the
    /// time), a value has no deadline to find and no central to wake, and nothing walks the
    /// tables to learn so.
    private var liveSubscriptions = 0
    /// Whether a subscription may hold a value for an interval (`retryAt`): set when one is held,
    /// cleared by `nextDeadlineInPlace` when it finds no deadline at all. Clear, with nothing
    /// that ticks, there is no deadline, and the subscriptions are not walked to learn so after
    /// every value (about 70 instructions under the default immediate policy).
    private var mayHoldValues = false

    /// Whether any central is subscribed to anything: without, nothing waits for a link and
    /// nothing has a deadline.
    public var hasSubscriptions: Bool { liveSubscriptions > 0 }

    public init() {}

    // MARK: Configuration

    /// The policy for every central subscribed to `characteristic` (default: `.immediate`).
    public mutating func configure(_ characteristic: Characteristic, policy: NotifyPolicy) {
        characteristics[place(of: characteristic)].policy = policy
        if policy.maxInterval != nil {
            characteristicsWithHeartbeat.insert(characteristic)
        } else {
            characteristicsWithHeartbeat.remove(characteristic)
        }
    }

    /// A policy for one central on one characteristic, replacing the characteristic's; nil
    /// returns it to the characteristic's policy.
    public mutating func override(_ policy: NotifyPolicy?, for central: Central, on characteristic: Characteristic) {
        overrides[Key(central: central, characteristic: characteristic)] = policy
    }

    /// A central's trigger conditions (from its ES Trigger Setting / ES Configuration writes),
    /// replacing the policy's value tests for that central; nil removes them. Fixed intervals
    /// count from `now`.
    public mutating func setTriggers(
        _ set: TriggerSet?, for central: Central, on characteristic: Characteristic,
        now: LoopInstant
    ) {
        triggers[Key(central: central, characteristic: characteristic)] = set.map {
            TriggerState(triggers: $0, origin: now)
        }
        if let position = position(of: central, on: characteristic) {
            self[position].ticksHandledUntil = now
        }
    }

    /// The trigger set a central wrote, for reads of its descriptors.
    public func triggers(for central: Central, on characteristic: Characteristic) -> TriggerSet? {
        triggers[Key(central: central, characteristic: characteristic)]?.triggers
    }

    // MARK: Subscriptions

    /// Starts a subscription (again, if there is one: a fresh start). Under the policy's
    /// `currentValueOnSubscribe` the characteristic's `current` value, if it has one, is judged at
    /// once like a new value — by the central's triggers when it has some, so set those first.
    public mutating func subscribe(
        _ central: Central, to characteristic: Characteristic, kind: UpdateKind, current: NotifySample?,
        now: LoopInstant
    ) {
        if position(of: central, on: characteristic) != nil { unsubscribe(central, from: characteristic) }
        let subscription = Subscription(
            central: central, kind: kind, lastEmitted: nil, lastEmittedAt: now, retryAt: nil,
            ticksHandledUntil: now, outbound: nil, sequence: subscriptionsMade)
        subscriptionsMade += 1
        liveSubscriptions += 1
        let state = place(of: characteristic)
        characteristics[state].subscriptions.append(subscription)
        if centralIndex(of: central) == nil { centrals.append(CentralState(central: central)) }
        let position = Position(state: state, slot: characteristics[state].subscriptions.count - 1)
        if policy(position).currentValueOnSubscribe, !characteristics[state].isStale, let current {
            judgeValue(at: position, sample: current, now: now)
        }
    }

    /// Ends a subscription; a value still held or waiting for the link counts as dropped.
    public mutating func unsubscribe(_ central: Central, from characteristic: Characteristic) {
        guard let position = position(of: central, on: characteristic) else { return }
        let subscription = characteristics[position.state].subscriptions.remove(at: position.slot)
        liveSubscriptions -= 1
        if subscription.outbound != nil { count(.dropped, central, characteristic) }
        if subscription.retryAt != nil { count(.dropped, central, characteristic) }
        if let index = centralIndex(of: central) { centrals[index].ready.removeAll { $0 == position.state } }
    }

    /// A central left: its subscriptions end, its triggers, overrides and counters are forgotten.
    public mutating func disconnect(_ central: Central) {
        let subscribed = characteristics.filter { $0.subscriptions.contains { $0.central == central } }
            .map(\.characteristic)
        for characteristic in subscribed { unsubscribe(central, from: characteristic) }
        overrides = overrides.filter { $0.key.central != central }
        triggers = triggers.filter { $0.key.central != central }
        centrals.removeAll { $0.central == central }
    }

    /// A characteristic no longer served (a reload changed its service): its subscriptions end
    /// (values waiting count as dropped), and its value, policy, triggers, overrides and counters
    /// are forgotten, so a characteristic configured again under the same key starts afresh.
    public mutating func remove(_ characteristic: Characteristic) {
        if let state = existingPlace(of: characteristic) {
            for subscription in characteristics[state].subscriptions {
                unsubscribe(subscription.central, from: characteristic)
            }
            characteristicPlaces[characteristic] = nil
            // The last characteristic takes the freed place; no central's queue holds the removed
            // one any more (its subscriptions ended), but some may hold the moved one.
            let moved = characteristics.count - 1
            characteristics.swapAt(state, moved)
            characteristics.removeLast()
            if state != moved {
                characteristicPlaces[characteristics[state].characteristic] = state
                for index in centrals.indices {
                    for entry in centrals[index].ready.indices where centrals[index].ready[entry] == moved {
                        centrals[index].ready[entry] = state
                    }
                }
            }
        }
        characteristicsWithHeartbeat.remove(characteristic)
        overrides = overrides.filter { $0.key.characteristic != characteristic }
        triggers = triggers.filter { $0.key.characteristic != characteristic }
    }

    // MARK: Values and time

    /// The value of `characteristic` is no longer current: ticks stop resending it (a value
    /// already held back by an interval still goes) until `update` brings a new one.
    public mutating func markStale(_ characteristic: Characteristic) {
        characteristics[place(of: characteristic)].isStale = true
    }

    /// A new value of `characteristic` (the caller's current value from now on), judged for
    /// every subscribed central.
    public mutating func update(_ characteristic: Characteristic, sample: NotifySample, now: LoopInstant) {
        let state = place(of: characteristic)
        characteristics[state].hasValue = true
        characteristics[state].isStale = false
        for slot in characteristics[state].subscriptions.indices {
            let position = Position(state: state, slot: slot)
            // A held value that never went out is superseded by this newer one.
            if self[position].retryAt != nil { count(.coalesced, at: position) }
            judgeValue(at: position, sample: sample, now: now)
        }
    }

    /// Handles every deadline up to `now`, each at its own time, in order; `currentValue`: a
    /// characteristic's value now, which a held value's interval end and a tick send.
    public mutating func advance(to now: LoopInstant, currentValue: (Characteristic) -> NotifySample?) {
        while let (position, deadline) = earliestDeadline(), deadline <= now {
            fire(position, at: deadline, sample: currentValue(characteristics[position.state].characteristic))
        }
    }

    /// When `advance(to:)` next has work; nil when nothing is scheduled.
    public var nextDeadline: LoopInstant? {
        earliestDeadline()?.1
    }

    // MARK: The link

    /// The next update for `central`, when its link can take one: the oldest waiting slot
    /// (indications only when none is awaiting confirmation). Counts it as sent.
    public mutating func nextTransmission(for central: Central) -> Transmission<Central, Characteristic>? {
        guard let centralIndex = centralIndex(of: central) else { return nil }
        for index in centrals[centralIndex].ready.indices {
            let state = centrals[centralIndex].ready[index]
            // The subscription is changed in place, not copied out and stored back (which
            // retained and released its values).
            guard let slot = characteristics[state].subscriptions.firstIndex(where: { $0.central == central }),
                characteristics[state].subscriptions[slot].outbound != nil
            else { continue }
            let position = Position(state: state, slot: slot)
            let kind = self[position].kind
            if kind == .indication {
                if centrals[centralIndex].indicationOutstanding { continue }
                centrals[centralIndex].indicationOutstanding = true
            }
            // Moved out of the slot, which it empties: a copy retained its bytes, released at once.
            let sample = self[position].outbound.take()!
            // The last is taken without `remove(at:)`'s general move (about 50 instructions for
            // the one entry there nearly always is).
            if index == centrals[centralIndex].ready.count - 1 {
                centrals[centralIndex].ready.removeLast()
            } else {
                centrals[centralIndex].ready.remove(at: index)
            }
            count(.sent, at: position, ofCentralAt: centralIndex)
            return Transmission(
                central: central, characteristic: characteristics[state].characteristic, kind: kind, sample: sample)
        }
        return nil
    }

    /// The link refused `transmission` (taken by `nextTransmission`, not sent): it goes back to its
    /// slot, uncounted as sent, unless a newer value took the slot meanwhile — then it counts as
    /// coalesced. So a refused value never goes out after a newer one: the slot holds only the
    /// newest value when the link has room again.
    public mutating func transmissionRefused(_ transmission: Transmission<Central, Characteristic>) {
        let central = transmission.central
        let characteristic = transmission.characteristic
        if transmission.kind == .indication { indicationConfirmed(by: central) }
        count(.sent, central, characteristic, by: -1)
        guard let position = position(of: central, on: characteristic) else {
            count(.dropped, central, characteristic)
            return
        }
        if self[position].outbound != nil {
            count(.coalesced, at: position)
            return
        }
        self[position].outbound = transmission.sample
        // It was the oldest waiting slot of its central; it stays first in line.
        if let index = centralIndex(of: central) { centrals[index].ready.insert(position.state, at: 0) }
    }

    /// Centrals subscribed to `characteristic`, in no particular order.
    public func subscribers(of characteristic: Characteristic) -> Set<Central> {
        guard let state = existingPlace(of: characteristic) else { return [] }
        return Set(characteristics[state].subscriptions.map(\.central))
    }

    /// The central confirmed its indication; the next one may go.
    public mutating func indicationConfirmed(by central: Central) {
        if let index = centralIndex(of: central) { centrals[index].indicationOutstanding = false }
    }

    /// Replaces the contents of `centrals` (a buffer the caller keeps) with the centrals that have
    /// a value waiting for their link. Mutating, though it changes nothing, so that a driver
    /// holding the engine in a class property reaches it in place: a non-mutating call there
    /// copies the whole engine first, retaining and releasing every table, on every drain.
    public mutating func collectCentralsWithPendingTransmissions(into centrals: inout [Central]) {
        // Popped, not `removeAll(keepingCapacity:)`, whose `replaceSubrange` costs about a hundred
        // instructions for the one or two there are (`removeAllKeepingStorage` in EventLoop, which
        // this pure engine does not import).
        while centrals.popLast() != nil {}
        guard liveSubscriptions > 0 else { return }
        // By index: a central's state read out of the array is a copy, its tables retained.
        for index in self.centrals.indices where !self.centrals[index].ready.isEmpty {
            centrals.append(self.centrals[index].central)
        }
    }

    /// `nextDeadline`, reached in place by a driver holding the engine in a class property (see
    /// `collectCentralsWithPendingTransmissions(into:)`).
    public mutating func nextDeadlineInPlace() -> LoopInstant? {
        let next = nextDeadline
        // No deadline at all: no value is held.
        if next == nil { mayHoldValues = false }
        return next
    }

    // MARK: Counters

    public var statistics: NotifyStatistics<Central, Characteristic> {
        NotifyStatistics(
            perCharacteristic: Dictionary(
                uniqueKeysWithValues: characteristics.compactMap { state in
                    state.counters.map { (state.characteristic, $0) }
                }),
            perCentral: Dictionary(uniqueKeysWithValues: centrals.map { ($0.central, $0.counters) }),
            valuesWaiting: characteristics.reduce(0) { waiting, state in
                waiting + state.subscriptions.filter { $0.outbound != nil }.count
            })
    }

    // MARK: Subscriptions by position

    /// The subscription at `position`, read and changed in place: a getter would copy it whole,
    /// retaining and releasing its values, to read one field.
    private subscript(position: Position) -> Subscription {
        _read { yield characteristics[position.state].subscriptions[position.slot] }
        _modify { yield &characteristics[position.state].subscriptions[position.slot] }
    }

    private func position(of central: Central, on characteristic: Characteristic) -> Position? {
        guard let state = existingPlace(of: characteristic),
            let slot = characteristics[state].subscriptions.firstIndex(where: { $0.central == central })
        else { return nil }
        return Position(state: state, slot: slot)
    }

    /// The characteristic's place in `characteristics`, if it has one. Searched in the list while
    /// it is short: comparing a few keys costs less than hashing one (SipHash), which every value
    /// did here.
    private func existingPlace(of characteristic: Characteristic) -> Int? {
        guard characteristics.count > Self.characteristicsSearchedInTheList else {
            return characteristics.firstIndex { $0.characteristic == characteristic }
        }
        return characteristicPlaces[characteristic]
    }

    private static var characteristicsSearchedInTheList: Int { 8 }

    /// The characteristic's place in `characteristics`, given one (with the default policy) if it
    /// has none.
    private mutating func place(of characteristic: Characteristic) -> Int {
        if let state = existingPlace(of: characteristic) { return state }
        characteristics.append(CharacteristicState(characteristic: characteristic))
        characteristicPlaces[characteristic] = characteristics.count - 1
        return characteristics.count - 1
    }

    private func centralIndex(of central: Central) -> Int? {
        centrals.firstIndex { $0.central == central }
    }

    /// The subscription's key in the overrides and triggers tables.
    private func key(_ position: Position) -> Key {
        Key(central: self[position].central, characteristic: characteristics[position.state].characteristic)
    }

    // MARK: Judging

    enum Decision: Equatable {
        case emit
        /// Worth sending but an interval has not passed: judge the newest value again then.
        case hold(until: LoopInstant)
        case refuse
    }

    /// Overrides and triggers are rare, so their tables are usually empty: looking in an empty
    /// table still hashes the key, and this runs several times for every value.
    private func policy(_ position: Position) -> NotifyPolicy {
        (overrides.isEmpty ? nil : overrides[key(position)]) ?? characteristics[position.state].policy
    }

    private func triggerState(_ position: Position) -> TriggerState? {
        triggers.isEmpty ? nil : triggers[key(position)]
    }

    /// Whether the newest value of the subscription's characteristic may go at `now`. `atTick`:
    /// the opportunity is a tick (fixed trigger interval or heartbeat), not a new value.
    private func decide(_ position: Position, sample: NotifySample, atTick: Bool, now: LoopInstant) -> Decision {
        let policy = policy(position)
        let lastEmittedAt = self[position].lastEmittedAt
        let hasEmitted = self[position].lastEmitted != nil
        // The earliest time a gate (a trigger's minimum spacing, the minimum interval) still
        // closed now opens; nil while none is closed. Kept as one value, not a list: this runs
        // for every value.
        var gateEnd: LoopInstant?
        func close(until end: LoopInstant) { gateEnd = min(gateEnd ?? end, end) }
        let admitted: Bool
        let admittedWithGatesOpen: Bool
        if let triggerSet = triggerState(position)?.triggers {
            let last = self[position].lastEmitted
            let sinceLast = hasEmitted ? now - lastEmittedAt : nil
            admitted = triggerSet.holds(sample, last: last, atTick: atTick, sinceLast: sinceLast, spacingWaived: false)
            admittedWithGatesOpen =
                admitted
                || triggerSet.holds(sample, last: last, atTick: atTick, sinceLast: sinceLast, spacingWaived: true)
            if hasEmitted {
                for spacing in triggerSet.minimumSpacings where lastEmittedAt + spacing > now {
                    close(until: lastEmittedAt + spacing)
                }
            }
        } else {
            // A heartbeat resends whatever the value is.
            // The last value read where it lies: a copy retained its bytes, for every value.
            admitted = atTick || policy.admits(sample, after: self[position].lastEmitted)
            admittedWithGatesOpen = admitted
        }
        guard admittedWithGatesOpen else { return .refuse }
        // The configured minimum interval is a floor under every rule. None by default: then no
        // instant is worked out (about 40 instructions per value).
        if hasEmitted, policy.minInterval > .zero {
            let floorEnds = lastEmittedAt + policy.minInterval
            if floorEnds > now { close(until: floorEnds) }
        }
        guard let end = gateEnd else { return admitted ? .emit : .refuse }
        return .hold(until: end)
    }

    /// A new value (or a held one whose interval has passed) for the subscription at `position`:
    /// emit, hold or refuse it.
    private mutating func judgeValue(at position: Position, sample: NotifySample, now: LoopInstant) {
        switch decide(position, sample: sample, atTick: false, now: now) {
        case .emit:
            emit(sample, at: position, now: now)
        case .hold(let until):
            self[position].retryAt = until
            mayHoldValues = true
        case .refuse:
            self[position].retryAt = nil
            count(.suppressed, at: position)
        }
    }

    /// Into the outbound slot of the subscription at `position`, changed in place.
    private mutating func emit(_ sample: NotifySample, at position: Position, now: LoopInstant) {
        if self[position].emit(sample, now: now) {
            count(.coalesced, at: position)
        } else if let index = centralIndex(of: self[position].central) {
            centrals[index].ready.append(position.state)
        }
    }

    /// A deadline of the subscription at `position` at `time`: a held value's interval ended, or
    /// a tick, for the characteristic's current `sample`. Either way the deadline moves past
    /// `time`, so `advance` always progresses.
    private mutating func fire(_ position: Position, at time: LoopInstant, sample: NotifySample?) {
        guard characteristics[position.state].hasValue, let sample else {
            // Deadlines only exist once a value does; clearing keeps `advance` from spinning.
            self[position].retryAt = nil
            return
        }
        if let retryAt = self[position].retryAt, retryAt <= time {
            self[position].retryAt = nil
            judgeValue(at: position, sample: sample, now: time)
            return
        }
        self[position].ticksHandledUntil = time
        // A tick only ever adds a transmission; a value held for an interval stays held.
        if decide(position, sample: sample, atTick: true, now: time) == .emit {
            emit(sample, at: position, now: time)
        }
    }

    /// The next tick after the ones handled: a fixed trigger interval, or (without triggers)
    /// the heartbeat `maxInterval` after the last emission.
    private func nextTick(_ position: Position) -> LoopInstant? {
        let handled = self[position].ticksHandledUntil
        // A stale value is not ticked: resending it would show it as current.
        let hasValue = characteristics[position.state].hasValue && !characteristics[position.state].isStale
        if let state = triggerState(position) {
            guard hasValue else { return nil }
            // In whole nanoseconds: the first tick (origin + k × interval) after the handled ones.
            let origin = state.origin.nanoseconds
            let elapsed = handled.nanoseconds > origin ? handled.nanoseconds - origin : 0
            return state.triggers.fixedIntervals.map { interval in
                let step = interval.nanoseconds
                let (sinceOrigin, overflow) = step.multipliedReportingOverflow(by: elapsed / step + 1)
                let (tick, beyond) = origin.addingReportingOverflow(sinceOrigin)
                return LoopInstant(nanoseconds: overflow || beyond ? .max : tick)
            }.min()
        }
        // Without a heartbeat (the usual case) there is nothing to look up further.
        guard let heartbeat = policy(position).maxInterval, hasValue else { return nil }
        let due = self[position].lastEmittedAt + heartbeat
        return due > handled ? due : handled + heartbeat
    }

    /// Scans every subscription: there are a few dozen at most (centrals × characteristics), and
    /// a scan keeps no second structure to go stale (only their count, to skip it when there are
    /// none).
    private func earliestDeadline() -> (Position, LoopInstant)? {
        guard liveSubscriptions > 0 else { return nil }
        var earliest: (position: Position, deadline: LoopInstant, sequence: Int)?
        let mayTick = !triggers.isEmpty || !overrides.isEmpty || !characteristicsWithHeartbeat.isEmpty
        guard mayTick || mayHoldValues else { return nil }
        // By position, reading only the fields needed: iterating the subscriptions copied each
        // (retaining and releasing its values) on every drain.
        for state in characteristics.indices {
            for slot in characteristics[state].subscriptions.indices {
                let position = Position(state: state, slot: slot)
                let tick = mayTick ? nextTick(position) : nil
                guard let deadline = self[position].retryAt.map({ min($0, tick ?? $0) }) ?? tick else { continue }
                let sequence = self[position].sequence
                if let current = earliest, (current.deadline, current.sequence) < (deadline, sequence) { continue }
                earliest = (position, deadline, sequence)
            }
        }
        return earliest.map { ($0.position, $0.deadline) }
    }

    /// Adds `amount` to a counter of the subscription's characteristic and of its central.
    private mutating func count(_ counter: NotifyCounters.Counter, at position: Position, by amount: Int = 1) {
        count(counter, at: position, ofCentralAt: centralIndex(of: self[position].central), by: amount)
    }

    /// `count(_:at:by:)` for a caller that has found the central's index in `centrals` already
    /// (nil when it is not connected): every notification sent is counted, by the call that
    /// found it, which need not search again.
    private mutating func count(
        _ counter: NotifyCounters.Counter, at position: Position, ofCentralAt centralIndex: Int?, by amount: Int = 1
    ) {
        characteristics[position.state].count(counter, by: amount)
        if let centralIndex { centrals[centralIndex].counters.add(amount, to: counter) }
    }

    /// Adds `amount` to a counter of the characteristic and of the central (while it is connected:
    /// a disconnected central's counters are gone), whether or not it is subscribed.
    private mutating func count(
        _ counter: NotifyCounters.Counter, _ central: Central, _ characteristic: Characteristic, by amount: Int = 1
    ) {
        characteristics[place(of: characteristic)].count(counter, by: amount)
        if let index = centralIndex(of: central) { centrals[index].counters.add(amount, to: counter) }
    }
}

/// What happened to values, per characteristic or per central.
public struct NotifyCounters: Sendable, Hashable, Codable {
    /// Handed to the link.
    public var sent = 0
    /// Replaced by a newer value before they went out (held for an interval, or waiting for the
    /// link).
    public var coalesced = 0
    /// Not worth sending under the policy or triggers (delta, on_change, conditions).
    public var suppressed = 0
    /// Lost without a successor: the subscription ended while they waited.
    public var dropped = 0

    public init() {}

    enum Counter { case sent, coalesced, suppressed, dropped }

    /// A switch, not a key path: counting is on every value's path, and a key path applied to a
    /// dictionary's value costs allocations.
    mutating func add(_ amount: Int, to counter: Counter) {
        switch counter {
        case .sent: sent += amount
        case .coalesced: coalesced += amount
        case .suppressed: suppressed += amount
        case .dropped: dropped += amount
        }
    }
}

/// A snapshot of the counters for the periodic log line and MQTT `state`.
public struct NotifyStatistics<Central: Hashable & Sendable, Characteristic: Hashable & Sendable>: Sendable {
    public let perCharacteristic: [Characteristic: NotifyCounters]
    /// Connected centrals only; a central's counters go when it disconnects.
    public let perCentral: [Central: NotifyCounters]
    /// Values in outbound slots now: at most one per subscription, whatever the input rate.
    public let valuesWaiting: Int

    /// One line for the periodic log: per characteristic, then per central, each sorted by name,
    /// e.g. `temp sent=5 coalesced=95 suppressed=0 dropped=0; central AA:BB sent=5 ...`.
    public var logLine: String {
        func entries<Key>(_ counters: [Key: NotifyCounters], prefix: String) -> [String] {
            counters.map { ("\(prefix)\($0.key)", $0.value) }
                .sorted { $0.0 < $1.0 }
                .map { name, counters in
                    "\(name) sent=\(counters.sent) coalesced=\(counters.coalesced) "
                        + "suppressed=\(counters.suppressed) dropped=\(counters.dropped)"
                }
        }
        let parts =
            entries(perCharacteristic, prefix: "") + entries(perCentral, prefix: "central ")
            + ["waiting=\(valuesWaiting)"]
        return parts.joined(separator: "; ")
    }
}
