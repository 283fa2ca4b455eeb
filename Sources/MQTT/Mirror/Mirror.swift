import FoundationEssentials
import LoopClock

/// The topic model of the MQTT mirror: a pure state machine, no I/O. Gateway events go in, the
/// messages and (un)subscriptions to perform come out; inbound messages are routed to what the
/// gateway must do with them. Time comes in with the events (the wall clock, for payloads) and
/// as `now` (the loop's clock, for heartbeats), so it is fully deterministic.
public struct Mirror: Sendable {
    public let configuration: MirrorConfiguration
    public let topics: MirrorTopics

    /// Each configured characteristic with its value topic and last value: a value finds all it
    /// needs with one look-up (hashing the id's two names), changed in place.
    private var characteristics: [MirrorCharacteristicID: Published]
    private let setTopics: [String: MirrorCharacteristicID]
    private var peripheral = MirrorPeripheralState(state: "unknown", advertising: false)
    private var centrals: [String: MirrorCentral] = [:]
    /// Subscribed centrals per characteristic, in subscription order.
    private var subscribers: [MirrorCharacteristicID: [(address: String, kind: MirrorSubscriptionKind)]] = [:]
    /// The components earlier device documents carried (the service keeps them in its state
    /// directory); nil when there is no record: discovery waits for a `discoverySurvey` of what
    /// the broker holds (`finishDiscovery`).
    public var publishedComponents: Set<HomeAssistantComponent>?
    /// The discovery prefix those components were published under: a document there that the
    /// configuration no longer publishes (discovery turned off, or the prefix changed) is cleared.
    public var publishedDiscoveryPrefix: String?
    /// The characteristics whose value is not current (their sensor stopped answering): their
    /// availability topic says `offline` and no heartbeat republishes their value.
    private var unavailable: Set<MirrorCharacteristicID> = []
    /// The characteristics with a heartbeat, and its length.
    private let heartbeatIntervals: [(id: MirrorCharacteristicID, interval: Duration)]
    /// Writes the values' timestamps.
    private var timestamps = MirrorTimestampWriter()

    /// A configured characteristic and its value topic's state. Its methods are called through
    /// the table's in-place access (`characteristics.values[index].publish(…)`): read through
    /// the table's getter, the entry was copied whole, retaining every name and setting it
    /// holds, several times per value.
    private struct Published: Sendable {
        let characteristic: MirrorCharacteristic
        /// Made once: interpolated for each value, it cost an allocation and three copies.
        let valueTopic: String
        let qos: MQTTQoS
        let retain: Bool
        /// The last value's payload (re-published on reconnect, and by heartbeats).
        var payload: [UInt8]?
        /// When the value topic was last published, by a value or a heartbeat, if it has a
        /// heartbeat: on the loop's monotonic clock, since the wall clock may jump (a Pi's, when
        /// NTP first syncs).
        var lastPublished: LoopInstant?

        /// The new value's message; its payload is the last one from now on.
        mutating func publish(
            _ value: MirrorValue, raw: [UInt8], at date: Date, timestamps: inout MirrorTimestampWriter,
            now: () -> LoopInstant
        ) -> MQTTMessage {
            var payload: [UInt8]
            switch characteristic.payloadStyle {
            case .json:
                // The last payload's storage, written over: the message that carried it is
                // usually gone by now, so the new one needs no allocation (and one that is still
                // held, by the backlog's hold, is copied first, as any shared array is).
                payload = self.payload.take() ?? []
                Mirror.writeValuePayload(value, at: date, timestamps: &timestamps, into: &payload)
            case .raw:
                payload = raw
            }
            self.payload = payload
            if characteristic.heartbeat != nil { lastPublished = now() }
            return message(payload)
        }

        /// The last value's message again, when a heartbeat of `interval` is due at `now`.
        mutating func beat(at now: LoopInstant, every interval: Duration) -> MQTTMessage? {
            guard let last = lastPublished, let payload, now >= last + interval else { return nil }
            lastPublished = now
            return message(payload)
        }

        func message(_ payload: [UInt8]) -> MQTTMessage {
            MQTTMessage(topic: valueTopic, payload: payload, qos: qos, retain: retain)
        }
    }

    public init(configuration: MirrorConfiguration) throws {
        try MirrorTopics.validateTopic(configuration.baseTopic, "base topic")
        try MirrorTopics.validateLevel(configuration.deviceID, "device id")
        if let prefix = configuration.discoveryPrefix {
            try MirrorTopics.validateTopic(prefix, "discovery prefix")
        }
        let topics = MirrorTopics(baseTopic: configuration.baseTopic, deviceID: configuration.deviceID)
        var byID: [MirrorCharacteristicID: Published] = [:]
        for characteristic in configuration.characteristics {
            let id = characteristic.id
            try MirrorTopics.validateLevel(id.service, "service name")
            try MirrorTopics.validateLevel(id.characteristic, "characteristic name in \(id.service)")
            if id.service == MirrorTopics.reservedService {
                throw MQTTError.invalidConfiguration("service name '\(id.service)' is reserved for the centrals topics; rename the service")
            }
            if let source = characteristic.sourceTopic {
                try MirrorTopics.validateTopic(source, "source topic of \(id)")
            }
            let published = Published(
                characteristic: characteristic, valueTopic: topics.value(id), qos: configuration.valueQoS,
                retain: configuration.retainValues && !characteristic.isEvent)
            guard byID.updateValue(published, forKey: id) == nil else {
                throw MQTTError.invalidConfiguration("characteristic \(id) appears twice")
            }
        }
        self.configuration = configuration
        self.topics = topics
        self.characteristics = byID
        var setTopics: [String: MirrorCharacteristicID] = [:]
        for characteristic in configuration.characteristics where characteristic.acceptsSet {
            setTopics[topics.set(characteristic.id)] = characteristic.id
        }
        self.setTopics = setTopics
        heartbeatIntervals = configuration.characteristics.compactMap { characteristic in
            characteristic.heartbeat.map { (characteristic.id, $0) }
        }
    }

    // MARK: Connection-level messages

    public var onlineMessage: MQTTMessage { MQTTMessage(topic: topics.availability, text: "online", retain: true) }
    public var lastWill: MQTTWill { MQTTWill(topic: topics.availability, payload: Array("offline".utf8)) }
    public var offlineMessage: MQTTMessage { MQTTMessage(topic: topics.availability, text: "offline", retain: true) }

    /// Topics to subscribe to on every (clean-session) connection: exactly the `/set` topics, the
    /// active source topics, Home Assistant's status topic, the per-entity discovery topics
    /// of earlier gattway versions (whatever is still retained there is cleared), and the
    /// centrals and subscriber lists (whatever an earlier run left there that is no longer true
    /// is corrected).
    public var inboundSubscriptions: [String] {
        var result = configuration.characteristics.filter(\.acceptsSet).map { topics.set($0.id) }
        result += activeSourceTopics.sorted()
        if let status = homeAssistantStatusTopic { result.append(status) }
        if let filter = discovery.perEntityTopicFilter { result.append(filter) }
        // What an earlier run left retained (a crash keeps its phones listed): corrected in `route`.
        result += [topics.central("+"), "\(topics.root)/+/+/subscribers"]
        return result
    }

    /// Everything retained, in publishing order: availability, discovery (not while there is no
    /// record of `publishedComponents`: `finishDiscovery` publishes it then), state, each sensor
    /// value's availability, values (when retained), subscriber lists, connected centrals.
    public var retainedSnapshot: [MQTTMessage] {
        var result =
            [onlineMessage] + abandonedDiscovery + (publishedComponents == nil ? [] : discoveryMessages) + [stateMessage]
        for characteristic in configuration.characteristics where characteristic.reportsAvailability {
            result.append(availabilityMessage(characteristic.id))
        }
        for characteristic in configuration.characteristics where configuration.retainValues && !characteristic.isEvent {
            if let published = characteristics[characteristic.id], let payload = published.payload {
                result.append(published.message(payload))
            }
        }
        for characteristic in configuration.characteristics where subscribers[characteristic.id] != nil {
            result.append(subscribersMessage(characteristic.id))
        }
        result += orderedCentrals.map(centralMessage)
        return result
    }

    /// The empty retained message that removes a device document published before under a
    /// prefix the configuration no longer publishes under (`mqtt.discovery` turned off, or
    /// `discovery_prefix` changed), which makes Home Assistant remove the device and its entities.
    private var abandonedDiscovery: [MQTTMessage] {
        guard let old = publishedDiscoveryPrefix, old != configuration.discoveryPrefix,
            !(publishedComponents ?? []).isEmpty
        else { return [] }
        return [MQTTMessage(topic: "\(old)/device/\(discovery.node)/config", payload: [], retain: true)]
    }

    /// The Home Assistant device document alone (what Home Assistant's birth message asks for).
    public var discoveryMessages: [MQTTMessage] { discovery.messages() }

    /// Where a start without a record of `publishedComponents` learns what the broker holds before
    /// publishing discovery (`DiscoverySurvey`); nil with a record, or with discovery off.
    public var discoverySurvey: DiscoverySurvey? {
        guard publishedComponents == nil, configuration.discoveryPrefix != nil else { return nil }
        return DiscoverySurvey(discovery: discovery, markerTopic: topics.discoverySurvey)
    }

    /// The discovery a start without a record publishes once `survey` says what the broker holds:
    /// the migration of the per-entity documents it holds of these entities, then the device
    /// document, in which the components of the broker's document that the configuration no
    /// longer has are removals. Those components count as published from here on.
    public mutating func finishDiscovery(_ survey: DiscoverySurvey) -> [MQTTMessage] {
        publishedComponents = survey.components
        return discovery.messages(migrating: survey.perEntityTopics)
    }

    /// What to remember once discovery is published: every component published so far (those
    /// removed stay, so their removal is published again should Home Assistant have missed it).
    public var componentsToRemember: Set<HomeAssistantComponent> {
        // Published under another prefix: the document there is cleared, and so forgotten.
        let moved = publishedDiscoveryPrefix.map { $0 != configuration.discoveryPrefix } ?? false
        let kept = moved ? [] : publishedComponents ?? []
        return configuration.discoveryPrefix == nil ? [] : kept.union(discovery.current)
    }

    private var discovery: HomeAssistantDiscovery {
        HomeAssistantDiscovery(configuration: configuration, topics: topics, published: publishedComponents ?? [])
    }

    // MARK: Gateway events

    /// `now`: when the event is applied, on the loop's clock (a value's heartbeat counts from it);
    /// read only for a value with a heartbeat, so no other event pays for reading the clock.
    ///
    /// Appends to `actions`, an array the caller can keep from one event to the next, so a value
    /// allocates none.
    public mutating func apply(_ event: MirrorEvent, now: @autoclosure () -> LoopInstant, into actions: inout [MirrorAction]) {
        switch event {
        case .peripheralState(let state):
            peripheral = state
            actions.append(.publish(stateMessage, durable: false))

        case .valueChanged(let id, let value, let raw, let date):
            guard let index = characteristics.index(forKey: id) else { return }
            let message = characteristics.values[index].publish(value, raw: raw, at: date, timestamps: &timestamps, now: now)
            actions.append(.publish(message, durable: false))

        case .availabilityChanged(let id, let reason):
            guard characteristics[id]?.characteristic.reportsAvailability == true else { return }
            let changed = reason == nil ? unavailable.remove(id) != nil : unavailable.insert(id).inserted
            if changed { actions.append(.publish(availabilityMessage(id), durable: false)) }

        case .centralConnected(let central):
            let isNew = centrals.updateValue(central, forKey: central.address) == nil
            actions.append(.publish(centralMessage(central), durable: true))
            if isNew { actions.append(.publish(stateMessage, durable: false)) }

        case .centralMTUChanged(let address, let mtu):
            guard var central = centrals[address] else { return }
            central.mtu = mtu
            centrals[address] = central
            actions.append(.publish(centralMessage(central), durable: true))

        case .centralSecurityChanged(let address, let security, let bonded):
            guard var central = centrals[address] else { return }
            central.security = security
            central.bonded = bonded
            centrals[address] = central
            actions.append(.publish(centralMessage(central), durable: true))

        case .centralDisconnected(let address):
            let sourcesBefore = activeSourceTopics
            for characteristic in configuration.characteristics {
                guard let list = subscribers[characteristic.id], list.contains(where: { $0.address == address })
                else { continue }
                subscribers[characteristic.id] = list.filter { $0.address != address }
                actions.append(.publish(subscribersMessage(characteristic.id), durable: true))
            }
            if centrals.removeValue(forKey: address) != nil {
                actions.append(.publish(MQTTMessage(topic: topics.central(address), payload: [], retain: true), durable: true))
                actions.append(.publish(stateMessage, durable: false))
            }
            actions += sourceChanges(from: sourcesBefore)

        case .subscribed(let id, let central, let kind):
            guard characteristics[id] != nil else { return }
            let sourcesBefore = activeSourceTopics
            var list = subscribers[id] ?? []
            if let index = list.firstIndex(where: { $0.address == central }) {
                list[index].kind = kind
            } else {
                list.append((central, kind))
            }
            subscribers[id] = list
            actions.append(.publish(subscribersMessage(id), durable: true))
            actions += sourceChanges(from: sourcesBefore)

        case .unsubscribed(let id, let central):
            guard characteristics[id] != nil else { return }
            let sourcesBefore = activeSourceTopics
            subscribers[id] = (subscribers[id] ?? []).filter { $0.address != central }
            actions.append(.publish(subscribersMessage(id), durable: true))
            actions += sourceChanges(from: sourcesBefore)

        case .written(let id, let value, let central, let kind, let date):
            guard characteristics[id] != nil else { return }
            let payload = JSONText.object([
                ("value", .literal(value.json)), ("central", .string(central)), ("kind", .string(kind.rawValue)),
                ("ts", .string(MirrorTimestamp.string(date)))
            ])
            actions.append(.publish(MQTTMessage(topic: topics.written(id), payload: payload.bytes), durable: true))

        case .outputFailed(let id, let central, let reason, let date):
            // The writer was already answered (ATT acknowledges a write before the line is
            // driven), so it learns of the failure here, through the outbox like the write itself.
            let payload = JSONText.object([
                ("topic", .string(topics.value(id))), ("central", .string(central)), ("reason", .string(reason)),
                ("ts", .string(MirrorTimestamp.string(date)))
            ])
            actions.append(.publish(MQTTMessage(topic: topics.error, payload: payload.bytes), durable: true))

        case .pairing(let central, let prompt, let date):
            // Not retained and not through the outbox: it is useful for the 30 s of one pairing
            // only, and must not wait for later subscribers.
            let (key, digits) =
                switch prompt {
                case .passkey(let digits): ("passkey", digits)
                case .compare(let digits): ("compare", digits)
                }
            let payload = JSONText.object([
                ("central", .string(central)), (key, .string(digits)),
                ("ts", .string(MirrorTimestamp.string(date)))
            ])
            actions.append(.publish(MQTTMessage(topic: topics.pairing, payload: payload.bytes), durable: false))
        }
    }

    /// The actions for `event`, in a new array (`apply(_:now:into:)`).
    public mutating func apply(_ event: MirrorEvent, now: @autoclosure () -> LoopInstant) -> [MirrorAction] {
        var actions: [MirrorAction] = []
        apply(event, now: now(), into: &actions)
        return actions
    }

    // MARK: Heartbeats

    /// The value topics whose heartbeat is due at `now` (the loop's clock): each one's last
    /// payload published again as it was (its `ts` stays the time of the value), so Home
    /// Assistant's `expire_after` sees that a sensor which has not changed is still there. An
    /// unavailable one is not: its value is no longer current.
    public mutating func heartbeats(at now: LoopInstant) -> [MirrorAction] {
        var actions: [MirrorAction] = []
        for (id, interval) in heartbeatIntervals where !unavailable.contains(id) {
            guard let index = characteristics.index(forKey: id),
                let message = characteristics.values[index].beat(at: now, every: interval)
            else { continue }
            actions.append(.publish(message, durable: false))
        }
        return actions
    }

    /// When to call `heartbeats(at:)` next: the earliest heartbeat due, and no later than the
    /// shortest heartbeat after `now`, since a first value arriving meanwhile is due no sooner.
    /// An unavailable characteristic's heartbeat is not due: `heartbeats(at:)` skips it, so its
    /// time stays in the past, and counting it made every check due at once, a timer that spun.
    /// nil when no characteristic has a heartbeat.
    public func nextHeartbeatCheck(after now: LoopInstant) -> LoopInstant? {
        guard let shortest = heartbeatIntervals.map(\.interval).min() else { return nil }
        var next = now + shortest
        for (id, interval) in heartbeatIntervals where !unavailable.contains(id) {
            if let last = characteristics[id]?.lastPublished { next = min(next, last + interval) }
        }
        return next
    }

    // MARK: Inbound

    /// What an inbound message means. Only the exact `/set` topics, the source topics currently
    /// subscribed and Home Assistant's `online` status are accepted; everything else is ignored.
    public func route(_ message: MQTTMessage) -> MirrorInbound {
        if let id = setTopics[message.topic] {
            return .set(id, payload: message.payload)
        }
        if activeSourceTopics.contains(message.topic) {
            let ids = configuration.characteristics
                .filter { $0.sourceTopic == message.topic && !(subscribers[$0.id] ?? []).isEmpty }
                .map(\.id)
            return .sourceValue(ids, payload: message.payload)
        }
        if message.topic == homeAssistantStatusTopic, message.payload == Array("online".utf8) {
            return .homeAssistantOnline
        }
        if message.retain, !message.payload.isEmpty, discovery.isStalePerEntityTopic(message.topic) {
            return .stalePerEntityDiscovery(message.topic)
        }
        if message.retain, !message.payload.isEmpty, let truth = retainedTruth(of: message.topic),
            truth.payload != message.payload
        {
            return .staleRetained(truth)
        }
        return .ignored
    }

    /// What a retained centrals or subscribers topic should say now: a central's document while
    /// it is connected, else nothing (an empty retained message clears it); a configured
    /// characteristic's subscriber list, else nothing. nil for any other topic.
    private func retainedTruth(of topic: String) -> MQTTMessage? {
        guard topic.hasPrefix(topics.root + "/") else { return nil }
        let levels = topic.dropFirst(topics.root.count + 1).split(separator: "/", omittingEmptySubsequences: false)
        if levels.count == 2, levels[0] == MirrorTopics.reservedService {
            let address = String(levels[1])
            return centrals[address].map(centralMessage) ?? MQTTMessage(topic: topic, payload: [], retain: true)
        }
        if levels.count == 3, levels[2] == "subscribers" {
            let id = MirrorCharacteristicID(service: String(levels[0]), characteristic: String(levels[1]))
            return characteristics[id] != nil
                ? subscribersMessage(id) : MQTTMessage(topic: topic, payload: [], retain: true)
        }
        return nil
    }

    /// The message on `<base>/<dev>/error` for a rejected `/set`.
    public func rejection(of id: MirrorCharacteristicID, reason: String, at date: Date) -> MQTTMessage {
        let payload = JSONText.object([
            ("topic", .string(topics.set(id))), ("reason", .string(reason)),
            ("ts", .string(MirrorTimestamp.string(date)))
        ])
        return MQTTMessage(topic: topics.error, payload: payload.bytes)
    }

    /// The message on `<base>/<dev>/error` for a durable event the broker refused (an MQTT 5
    /// PUBACK with a reason code of 0x80 or more): the event itself, so it is not lost unseen.
    public func refusal(of message: MQTTMessage, reason: String, at date: Date) -> MQTTMessage {
        let payload = JSONText.object([
            ("topic", .string(message.topic)), ("payload", .string(String(decoding: message.payload, as: UTF8.self))),
            ("reason", .string(reason)), ("ts", .string(MirrorTimestamp.string(date)))
        ])
        return MQTTMessage(topic: topics.error, payload: payload.bytes)
    }

    /// The last peripheral state applied (`state` topic), for publishing it again with new counts.
    public var peripheralState: MirrorPeripheralState { peripheral }

    // MARK: Rendering

    private var homeAssistantStatusTopic: String? {
        configuration.discoveryPrefix.map { "\($0)/status" }
    }

    private var orderedCentrals: [MirrorCentral] {
        centrals.values.sorted { ($0.since, $0.address) < ($1.since, $1.address) }
    }

    private var stateMessage: MQTTMessage {
        let payload = JSONText.object([
            ("state", .string(peripheral.state)),
            ("advertising", .bool(peripheral.advertising)),
            ("centrals", .array(orderedCentrals.map { .string($0.address) })),
            ("uptime", .integer(Int64(peripheral.uptime))), ("outbox", .integer(Int64(peripheral.outbox))),
            ("refused", .integer(Int64(peripheral.refused))),
            ("counters", .object(peripheral.counters.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) })),
            ("pairing", .bool(peripheral.pairing)),
            ("unavailable", .object(peripheral.unavailable.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))
        ])
        return MQTTMessage(topic: topics.state, payload: payload.bytes, retain: true)
    }

    private func availabilityMessage(_ id: MirrorCharacteristicID) -> MQTTMessage {
        MQTTMessage(topic: topics.availability(id), text: unavailable.contains(id) ? "offline" : "online", retain: true)
    }

    /// Writes `{"value":<value>,"ts":"<timestamp>"}` into `payload`, over what it held: what
    /// `JSONText.object` would write (no key or timestamp needs escaping). One goes out per value,
    /// so it is written into scratch memory (the stack, for any common value) without a check per
    /// byte and copied into the payload at once. The fixed text comes from static strings, which
    /// cost no once-token or retain per value, as arrays made once did.
    static func writeValuePayload(
        _ value: MirrorValue, at date: Date, timestamps: inout MirrorTimestampWriter, into payload: inout [UInt8]
    ) {
        let start: StaticString = #"{"value":"#
        let timestamp: StaticString = #","ts":""#
        let end: StaticString = #""}"#
        var json = value.json
        json.withUTF8 { json in
            let length =
                start.utf8CodeUnitCount + json.count + timestamp.utf8CodeUnitCount + MirrorTimestamp.length
                + end.utf8CodeUnitCount
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: length) { text in
                var position = text.baseAddress!
                func put(_ bytes: UnsafePointer<UInt8>, _ count: Int) {
                    position.initialize(from: bytes, count: count)
                    position += count
                }
                put(start.utf8Start, start.utf8CodeUnitCount)
                if let bytes = json.baseAddress { put(bytes, json.count) }
                put(timestamp.utf8Start, timestamp.utf8CodeUnitCount)
                timestamps.write(date, to: position)
                position += MirrorTimestamp.length
                put(end.utf8Start, end.utf8CodeUnitCount)
                payload.removeAll(keepingCapacity: true)
                payload.append(contentsOf: UnsafeBufferPointer(text))
            }
        }
    }

    private func centralMessage(_ central: MirrorCentral) -> MQTTMessage {
        let payload = JSONText.object([
            ("address", .string(central.address)), ("mtu", .integer(Int64(central.mtu))),
            ("security", .string(central.security.rawValue)), ("bonded", .bool(central.bonded)),
            ("since", .string(MirrorTimestamp.string(central.since)))
        ])
        return MQTTMessage(topic: topics.central(central.address), payload: payload.bytes, retain: true)
    }

    private func subscribersMessage(_ id: MirrorCharacteristicID) -> MQTTMessage {
        let list = (subscribers[id] ?? []).map {
            JSONText.object([("address", .string($0.address)), ("kind", .string($0.kind.rawValue))])
        }
        return MQTTMessage(
            topic: topics.subscribers(id), payload: JSONText.object([("centrals", .array(list))]).bytes,
            retain: true)
    }

    /// Source topics of characteristics with at least one subscribed central.
    private var activeSourceTopics: Set<String> {
        Set(
            configuration.characteristics.compactMap { characteristic in
                (subscribers[characteristic.id] ?? []).isEmpty ? nil : characteristic.sourceTopic
            })
    }

    private func sourceChanges(from before: Set<String>) -> [MirrorAction] {
        let after = activeSourceTopics
        return after.subtracting(before).sorted().map(MirrorAction.subscribe)
            + before.subtracting(after).sorted().map(MirrorAction.unsubscribe)
    }
}
