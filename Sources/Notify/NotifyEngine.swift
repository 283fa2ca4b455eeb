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
/// when, and holds what waits for the link. Pure and deterministic: time is a `Duration` since
/// an origin the driver chooses, passed in with every call; nothing sleeps or reads a clock.
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
    /// gateway's) also specializes the dictionaries keyed by it: with the derived conformance,
    /// every lookup went through a protocol witness that instantiated this generic type's
    /// metadata at run time, five or six times per value.
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
        var policy = NotifyPolicy.immediate
        var latest: NotifySample?
        var subscribers: Set<Central> = []
    }

    struct TriggerState: Sendable {
        let triggers: TriggerSet
        /// Fixed time intervals tick at origin + k × interval.
        let origin: Duration
    }

    struct Subscription: Sendable {
        let kind: UpdateKind
        /// The last value emitted (what the central has, or will get from the slot).
        var lastEmitted: NotifySample?
        /// When the last value was emitted, or when the subscription began (heartbeat origin).
        var lastEmittedAt: Duration
        /// Whether the newest value waits for an interval; judged again at `retryAt`.
        var retryAt: Duration?
        /// Ticks up to this time are handled.
        var ticksHandledUntil: Duration
        /// The value waiting for the link.
        var outbound: NotifySample?
        /// Subscription order: breaks ties between equal deadlines, so runs are reproducible.
        let sequence: Int

        /// `sample` goes into the outbound slot and counts as emitted at `now`; true when it
        /// replaced a value still waiting there.
        mutating func emit(_ sample: NotifySample, now: Duration) -> Bool {
            let replaced = outbound != nil
            outbound = sample
            lastEmitted = sample
            lastEmittedAt = now
            retryAt = nil
            return replaced
        }
    }

    private var characteristics: [Characteristic: CharacteristicState] = [:]
    private var subscriptions: [Key: Subscription] = [:]
    private var overrides: [Key: NotifyPolicy] = [:]
    private var triggers: [Key: TriggerState] = [:]
    /// Characteristics whose policy has a heartbeat (`maxInterval`): without these, triggers and
    /// overrides, only held values have deadlines, and finding the next one computes no ticks.
    private var characteristicsWithHeartbeat: Set<Characteristic> = []
    /// Per central, characteristics whose slot holds a value, oldest first (each at most once).
    private var ready: [Central: [Characteristic]] = [:]
    private var indicationOutstanding: Set<Central> = []
    private var subscriptionCount = 0
    private var characteristicCounters: [Characteristic: NotifyCounters] = [:]
    private var centralCounters: [Central: NotifyCounters] = [:]

    public init() {}

    // MARK: Configuration

    /// The policy for every central subscribed to `characteristic` (default: `.immediate`).
    public mutating func configure(_ characteristic: Characteristic, policy: NotifyPolicy) {
        characteristics[characteristic, default: CharacteristicState()].policy = policy
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
        now: Duration
    ) {
        let key = Key(central: central, characteristic: characteristic)
        triggers[key] = set.map { TriggerState(triggers: $0, origin: now) }
        if var subscription = subscriptions[key] {
            subscription.ticksHandledUntil = now
            subscriptions[key] = subscription
        }
    }

    /// The trigger set a central wrote, for reads of its descriptors.
    public func triggers(for central: Central, on characteristic: Characteristic) -> TriggerSet? {
        triggers[Key(central: central, characteristic: characteristic)]?.triggers
    }

    // MARK: Subscriptions

    /// Starts a subscription (again, if there is one: a fresh start). Under the policy's
    /// `currentValueOnSubscribe` the characteristic's current value, if it has one, is judged at
    /// once like a new value — by the central's triggers when it has some, so set those first.
    public mutating func subscribe(
        _ central: Central, to characteristic: Characteristic, kind: UpdateKind,
        now: Duration
    ) {
        let key = Key(central: central, characteristic: characteristic)
        if subscriptions[key] != nil { unsubscribe(central, from: characteristic) }
        subscriptions[key] = Subscription(
            kind: kind, lastEmitted: nil, lastEmittedAt: now, retryAt: nil,
            ticksHandledUntil: now, outbound: nil, sequence: subscriptionCount)
        subscriptionCount += 1
        characteristics[characteristic, default: CharacteristicState()].subscribers.insert(central)
        if centralCounters[central] == nil { centralCounters[central] = NotifyCounters() }
        if policy(key).currentValueOnSubscribe, let current = characteristics[characteristic]?.latest,
            let subscription = subscriptions.index(forKey: key)
        {
            judgeValue(key, at: subscription, sample: current, now: now)
        }
    }

    /// Ends a subscription; a value still held or waiting for the link counts as dropped.
    public mutating func unsubscribe(_ central: Central, from characteristic: Characteristic) {
        let key = Key(central: central, characteristic: characteristic)
        guard let subscription = subscriptions.removeValue(forKey: key) else { return }
        if subscription.outbound != nil { count(.dropped, key) }
        if subscription.retryAt != nil { count(.dropped, key) }
        characteristics[characteristic]?.subscribers.remove(central)
        ready[central]?.removeAll { $0 == characteristic }
    }

    /// A central left: its subscriptions end, its triggers, overrides and counters are forgotten.
    public mutating func disconnect(_ central: Central) {
        for key in subscriptions.keys.filter({ $0.central == central }) {
            unsubscribe(central, from: key.characteristic)
        }
        overrides = overrides.filter { $0.key.central != central }
        triggers = triggers.filter { $0.key.central != central }
        ready[central] = nil
        indicationOutstanding.remove(central)
        centralCounters[central] = nil
    }

    /// A characteristic no longer served (a reload changed its service): its subscriptions end
    /// (values waiting count as dropped), and its value, policy, triggers, overrides and counters
    /// are forgotten, so a characteristic configured again under the same key starts afresh.
    public mutating func remove(_ characteristic: Characteristic) {
        for central in characteristics[characteristic]?.subscribers ?? [] {
            unsubscribe(central, from: characteristic)
        }
        characteristics[characteristic] = nil
        characteristicsWithHeartbeat.remove(characteristic)
        overrides = overrides.filter { $0.key.characteristic != characteristic }
        triggers = triggers.filter { $0.key.characteristic != characteristic }
        characteristicCounters[characteristic] = nil
    }

    // MARK: Values and time

    /// A new value of `characteristic`, judged for every subscribed central.
    public mutating func update(_ characteristic: Characteristic, sample: NotifySample, now: Duration) {
        // In place when the characteristic is known, not through the defaulting subscript: its
        // modify accessor allocated on every value.
        guard let index = characteristics.index(forKey: characteristic) else {
            characteristics[characteristic] = CharacteristicState(latest: sample)
            return
        }
        characteristics.values[index].latest = sample
        let characteristicPolicy = characteristics.values[index].policy
        for central in characteristics.values[index].subscribers {
            let key = Key(central: central, characteristic: characteristic)
            guard let subscription = subscriptions.index(forKey: key) else { continue }
            // A held value that never went out is superseded by this newer one.
            if subscriptions.values[subscription].retryAt != nil { count(.coalesced, key) }
            judgeValue(key, at: subscription, sample: sample, now: now, characteristicPolicy: characteristicPolicy)
        }
    }

    /// Handles every deadline up to `now`, each at its own time, in order.
    public mutating func advance(to now: Duration) {
        while let (key, deadline) = earliestDeadline(), deadline <= now {
            fire(key, at: deadline)
        }
    }

    /// When `advance(to:)` next has work; nil when nothing is scheduled.
    public var nextDeadline: Duration? {
        earliestDeadline()?.1
    }

    // MARK: The link

    /// The next update for `central`, when its link can take one: the oldest waiting slot
    /// (indications only when none is awaiting confirmation). Counts it as sent.
    public mutating func nextTransmission(for central: Central) -> Transmission<Central, Characteristic>? {
        // Indexed, not iterated over a copy: the removal below then mutates the queue in place.
        guard let queue = ready.index(forKey: central) else { return nil }
        for index in 0..<ready.values[queue].count {
            let characteristic = ready.values[queue][index]
            let key = Key(central: central, characteristic: characteristic)
            // The subscription is changed in place, not copied out and stored back (which
            // retained and released its values and hashed the key a second time).
            guard let slot = subscriptions.index(forKey: key), let sample = subscriptions.values[slot].outbound
            else { continue }
            let kind = subscriptions.values[slot].kind
            if kind == .indication {
                if indicationOutstanding.contains(central) { continue }
                indicationOutstanding.insert(central)
            }
            subscriptions.values[slot].outbound = nil
            ready.values[queue].remove(at: index)
            count(.sent, key)
            return Transmission(central: central, characteristic: characteristic, kind: kind, sample: sample)
        }
        return nil
    }

    /// The link refused `transmission` (taken by `nextTransmission`, not sent): it goes back to its
    /// slot, uncounted as sent, unless a newer value took the slot meanwhile — then it counts as
    /// coalesced. So a refused value never goes out after a newer one: the slot holds only the
    /// newest value when the link has room again.
    public mutating func transmissionRefused(_ transmission: Transmission<Central, Characteristic>) {
        let key = Key(central: transmission.central, characteristic: transmission.characteristic)
        if transmission.kind == .indication { indicationOutstanding.remove(transmission.central) }
        count(.sent, key, by: -1)
        guard var subscription = subscriptions[key] else {
            count(.dropped, key)
            return
        }
        if subscription.outbound != nil {
            count(.coalesced, key)
            return
        }
        subscription.outbound = transmission.sample
        subscriptions[key] = subscription
        // It was the oldest waiting slot of its central; it stays first in line.
        ready.modifyValue(of: key.central, default: []) { $0.insert(key.characteristic, at: 0) }
    }

    /// Centrals subscribed to `characteristic`, in no particular order.
    public func subscribers(of characteristic: Characteristic) -> Set<Central> {
        characteristics[characteristic]?.subscribers ?? []
    }

    /// The central confirmed its indication; the next one may go.
    public mutating func indicationConfirmed(by central: Central) {
        indicationOutstanding.remove(central)
    }

    /// Replaces the contents of `centrals` (a buffer the caller keeps) with the centrals that have
    /// a value waiting for their link. Mutating, though it changes nothing, so that a driver
    /// holding the engine in a class property reaches it in place: a non-mutating call there
    /// copies the whole engine first, retaining and releasing every table, on every drain.
    public mutating func collectCentralsWithPendingTransmissions(into centrals: inout [Central]) {
        centrals.removeAll(keepingCapacity: true)
        for (central, queue) in ready where !queue.isEmpty { centrals.append(central) }
    }

    /// `nextDeadline`, reached in place by a driver holding the engine in a class property (see
    /// `collectCentralsWithPendingTransmissions(into:)`).
    public mutating func nextDeadlineInPlace() -> Duration? {
        nextDeadline
    }

    // MARK: Counters

    public var statistics: NotifyStatistics<Central, Characteristic> {
        NotifyStatistics(
            perCharacteristic: characteristicCounters, perCentral: centralCounters,
            valuesWaiting: subscriptions.values.filter { $0.outbound != nil }.count)
    }

    // MARK: Judging

    enum Decision: Equatable {
        case emit
        /// Worth sending but an interval has not passed: judge the newest value again then.
        case hold(until: Duration)
        case refuse
    }

    /// Overrides and triggers are rare, so their tables are usually empty: looking in an empty
    /// table still hashes the key, and this runs several times for every value.
    /// `characteristicPolicy`: the characteristic's, when the caller has it at hand.
    private func policy(_ key: Key, characteristicPolicy: NotifyPolicy? = nil) -> NotifyPolicy {
        (overrides.isEmpty ? nil : overrides[key]) ?? characteristicPolicy ?? characteristics[key.characteristic]?.policy
            ?? .immediate
    }

    private func triggerState(_ key: Key) -> TriggerState? {
        triggers.isEmpty ? nil : triggers[key]
    }

    /// Whether the newest value of `key`'s characteristic may go at `now`. `atTick`: the
    /// opportunity is a tick (fixed trigger interval or heartbeat), not a new value.
    private func decide(
        _ key: Key, _ subscription: Subscription, sample: NotifySample, atTick: Bool,
        now: Duration, characteristicPolicy: NotifyPolicy? = nil
    ) -> Decision {
        let policy = policy(key, characteristicPolicy: characteristicPolicy)
        let last = subscription.lastEmitted
        let sinceLast = last == nil ? nil : now - subscription.lastEmittedAt
        // The earliest time a gate (a trigger's minimum spacing, the minimum interval) still
        // closed now opens; nil while none is closed. Kept as one value, not a list: this runs
        // for every value.
        var gateEnd: Duration?
        func close(until end: Duration) { gateEnd = min(gateEnd ?? end, end) }
        let admitted: Bool
        let admittedWithGatesOpen: Bool
        if let triggerSet = triggerState(key)?.triggers {
            admitted = triggerSet.holds(sample, last: last, atTick: atTick, sinceLast: sinceLast, spacingWaived: false)
            admittedWithGatesOpen =
                admitted
                || triggerSet.holds(sample, last: last, atTick: atTick, sinceLast: sinceLast, spacingWaived: true)
            if sinceLast != nil {
                for spacing in triggerSet.minimumSpacings where subscription.lastEmittedAt + spacing > now {
                    close(until: subscription.lastEmittedAt + spacing)
                }
            }
        } else {
            // A heartbeat resends whatever the value is.
            admitted = atTick || policy.admits(sample, after: last)
            admittedWithGatesOpen = admitted
        }
        guard admittedWithGatesOpen else { return .refuse }
        // The configured minimum interval is a floor under every rule.
        let floorEnds = subscription.lastEmittedAt + policy.minInterval
        if sinceLast != nil, floorEnds > now { close(until: floorEnds) }
        guard let end = gateEnd else { return admitted ? .emit : .refuse }
        return .hold(until: end)
    }

    /// A new value (or a held one whose interval has passed) for the subscription at `slot`
    /// (`key`'s in `subscriptions`): emit, hold or refuse it. `characteristicPolicy`: the
    /// characteristic's, when the caller has it at hand (a lookup less for every value).
    private mutating func judgeValue(
        _ key: Key, at slot: [Key: Subscription].Index, sample: NotifySample, now: Duration,
        characteristicPolicy: NotifyPolicy? = nil
    ) {
        switch decide(
            key, subscriptions.values[slot], sample: sample, atTick: false, now: now,
            characteristicPolicy: characteristicPolicy)
        {
        case .emit:
            emit(sample, at: slot, key: key, now: now)
        case .hold(let until):
            subscriptions.values[slot].retryAt = until
        case .refuse:
            subscriptions.values[slot].retryAt = nil
            count(.suppressed, key)
        }
    }

    /// Into the outbound slot of the subscription at `slot`, changed in place.
    private mutating func emit(
        _ sample: NotifySample, at slot: [Key: Subscription].Index, key: Key, now: Duration
    ) {
        let replaced = subscriptions.values[slot].emit(sample, now: now)
        if replaced {
            count(.coalesced, key)
        } else {
            ready.modifyValue(of: key.central, default: []) { $0.append(key.characteristic) }
        }
    }

    /// A deadline of `key` at `time`: a held value's interval ended, or a tick. Either way the
    /// deadline moves past `time`, so `advance` always progresses.
    private mutating func fire(_ key: Key, at time: Duration) {
        guard let slot = subscriptions.index(forKey: key) else { return }
        guard let sample = characteristics[key.characteristic]?.latest else {
            // Deadlines only exist once a value does; clearing keeps `advance` from spinning.
            subscriptions.values[slot].retryAt = nil
            return
        }
        if let retryAt = subscriptions.values[slot].retryAt, retryAt <= time {
            subscriptions.values[slot].retryAt = nil
            judgeValue(key, at: slot, sample: sample, now: time)
            return
        }
        subscriptions.values[slot].ticksHandledUntil = time
        // A tick only ever adds a transmission; a value held for an interval stays held.
        if decide(key, subscriptions.values[slot], sample: sample, atTick: true, now: time) == .emit {
            emit(sample, at: slot, key: key, now: time)
        }
    }

    /// The next tick after the ones handled: a fixed trigger interval, or (without triggers)
    /// the heartbeat `maxInterval` after the last emission.
    private func nextTick(_ key: Key, _ subscription: Subscription) -> Duration? {
        let handled = subscription.ticksHandledUntil
        if let state = triggerState(key) {
            guard characteristics[key.characteristic]?.latest != nil else { return nil }
            return state.triggers.fixedIntervals.map { interval in
                let periods = Int(((handled - state.origin) / interval).rounded(.down)) + 1
                let tick = state.origin + interval * periods
                // Duration division goes through Double; never return a handled tick.
                return tick > handled ? tick : tick + interval
            }.min()
        }
        // Without a heartbeat (the usual case) there is nothing to look up further.
        guard let heartbeat = policy(key).maxInterval, characteristics[key.characteristic]?.latest != nil
        else { return nil }
        let due = subscription.lastEmittedAt + heartbeat
        return due > handled ? due : handled + heartbeat
    }

    /// Scans every subscription: there are a few dozen at most (centrals × characteristics), and
    /// a scan keeps no second structure to go stale.
    private func earliestDeadline() -> (Key, Duration)? {
        var earliest: (slot: [Key: Subscription].Index, deadline: Duration, sequence: Int)?
        let mayTick = !triggers.isEmpty || !overrides.isEmpty || !characteristicsWithHeartbeat.isEmpty
        // By index, reading only the fields needed: iterating the pairs copied every key and
        // subscription (retaining and releasing their values) on every drain.
        for slot in subscriptions.indices {
            let tick = mayTick ? nextTick(subscriptions.keys[slot], subscriptions.values[slot]) : nil
            guard let deadline = subscriptions.values[slot].retryAt.map({ min($0, tick ?? $0) }) ?? tick else {
                continue
            }
            let sequence = subscriptions.values[slot].sequence
            if let current = earliest, (current.deadline, current.sequence) < (deadline, sequence) { continue }
            earliest = (slot, deadline, sequence)
        }
        return earliest.map { (subscriptions.keys[$0.slot], $0.deadline) }
    }

    /// Adds `amount` to a counter of the characteristic and of the central (while it is connected:
    /// a disconnected central's counters are gone).
    private mutating func count(_ counter: NotifyCounters.Counter, _ key: Key, by amount: Int = 1) {
        characteristicCounters.modifyValue(of: key.characteristic, default: NotifyCounters()) {
            $0.add(amount, to: counter)
        }
        centralCounters.modifyValue(of: key.central) { $0.add(amount, to: counter) }
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

extension Dictionary {
    /// Changes the value of `key` in place, when there is one. Not `self[key]?.change()`: a
    /// mutation optional-chained through the subscript costs three heap allocations per call
    /// (the frames of its modify accessors), and the engine does this for every value sent.
    @inline(__always)
    mutating func modifyValue(of key: Key, _ change: (inout Value) -> Void) {
        if let index = index(forKey: key) { change(&values[index]) }
    }

    /// Changes the value of `key` in place, starting from `initial` when there is none. Not
    /// `self[key, default: initial].change()`, whose modify accessor allocates on every call.
    @inline(__always)
    mutating func modifyValue(of key: Key, default initial: @autoclosure () -> Value, _ change: (inout Value) -> Void) {
        if let index = index(forKey: key) {
            change(&values[index])
        } else {
            var value = initial()
            change(&value)
            self[key] = value
        }
    }
}
