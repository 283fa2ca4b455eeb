import BluetoothGATT
import Config
import EventLoop
import Logging
import Notify
import Sensors
import Values

/// What the pipeline tells the MQTT mirror, in order.
public enum PipelineEvent: Sendable, Equatable {
    /// The characteristic's new value, as its bytes on air: MQTT prints what a phone reads.
    case valueChanged(CharacteristicRef, [UInt8])
    case centralConnected(CentralID, mtu: Int)
    /// The central's ATT_MTU changed (an MTU exchange).
    case mtuChanged(CentralID, mtu: Int)
    /// The central's link security changed (encryption, pairing, bond).
    case securityChanged(CentralID, LinkSecurity)
    case centralDisconnected(CentralID)
    case subscribed(CharacteristicRef, CentralID, UpdateKind)
    case unsubscribed(CharacteristicRef, CentralID)
    /// A central's accepted write, as the bytes it wrote.
    case written(CharacteristicRef, CentralID, [UInt8], GATTWriteKind)
    /// A central's accepted write to an output could not drive its line (the write was already
    /// answered: an ATT write is acknowledged before the line is driven).
    case outputFailed(CharacteristicRef, CentralID, reason: String)
    /// The peripheral's state and the notify counters summed over characteristics, on every
    /// state change and every statistics interval (MQTT's `state` topic).
    case status(peripheral: String, advertising: Bool, counters: [String: Int])
}

/// The value pipeline: sensor readings (and MQTT values, and centrals' writes) become each
/// characteristic's current value, served to reads, and go through the `NotifyEngine` to every
/// subscribed central by `Peripheral.updateValue(_:for:onSubscribedCentrals:)`.
///
/// Backpressure: when `updateValue` returns false the link is full; the transmission taken from
/// the engine goes back to the engine's slot for its subscription (unless a newer value took it
/// meanwhile), which keeps only the newest value, nothing more is taken, and draining resumes on
/// the peripheral's `readyToUpdateSubscribers` with the newest value. Time: one timer, armed for
/// the engine's `nextDeadline` only.
///
/// Triggers: a central's accepted write to an ESS characteristic's trigger descriptors
/// (`TriggerDescriptors`, one state per characteristic for the whole server) becomes the triggers
/// of every central subscribed to it, and of those subscribing later.
public actor ValuePipeline {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    /// `.realTime` arms a timer for the engine's deadlines; `.manual` leaves time to the caller's
    /// `advance()` (tests, with a manual clock).
    public enum Timing: Sendable { case realTime, manual }

    public let layout: GATTLayout
    private let peripheral: Peripheral
    private let clock: @Sendable () -> ContinuousClock.Instant
    private let origin: ContinuousClock.Instant
    private let timing: Timing
    private let logger: Logger
    /// Drives an output sensor's line (`SensorRunner.write`).
    private let driveOutput: @Sendable (String, Bool) async throws -> Void
    private let values: CharacteristicValues
    private var engine = NotifyEngine<CentralID, CharacteristicRef>()
    private var published: [CharacteristicRef: PublishedCharacteristic] = [:]
    private var refsByValueHandle: [UInt16: CharacteristicRef] = [:]
    /// The `valueChanged` events of fixed and written values, told to the mirror when `run` starts.
    private var configuredValues: [CharacteristicRef: PipelineEvent] = [:]
    /// Each characteristic's current bytes, also before the services are published.
    private var latest: [CharacteristicRef: [UInt8]] = [:]
    /// (sensor id, channel) → the characteristics carrying that reading.
    private var sensorRoutes: [SensorRoute: [CharacteristicRef]] = [:]
    /// The triggers centrals wrote, per characteristic (`TriggerDescriptors`).
    private var serverTriggers: [CharacteristicRef: TriggerSet] = [:]
    /// Centrals whose `updateValue` returned false since the last `readyToUpdateSubscribers`: the
    /// link or their share of it is full. Others are still served, so a stalled central delays
    /// nobody else.
    private var fullCentrals: Set<CentralID> = []
    private var peripheralState = PeripheralState.unknown
    /// Lost GPIO events per sensor (their running totals).
    private var lostEventTotals: [String: Int] = [:]
    private var advertising = false
    /// The event-loop timer for the engine's deadlines, made at the first deadline.
    private var timer: EventLoop.Timer?
    private var timerDeadline: Duration?
    private let eventContinuation: AsyncStream<PipelineEvent>.Continuation
    private let publishesEvents: Bool
    /// Values and status for the MQTT mirror, when `publishesEvents`: state that the next one
    /// replaces, so at most `eventBufferSize` wait for a slow consumer and beyond that the oldest
    /// are dropped (values coalesce) rather than let a fast sensor grow memory. Without
    /// `publishesEvents` (no MQTT: nobody reads them) none are kept.
    public nonisolated let events: AsyncStream<PipelineEvent>
    public static let eventBufferSize = 4096
    /// The events MQTT must deliver every one of (writes, subscriptions, centrals and their
    /// MTU and security), when `publishesEvents`: never dropped here. The mirror appends each to
    /// its persistent outbox as it arrives, so they wait on disk, not in memory, while the broker
    /// is away.
    public nonisolated let durableEvents: AsyncStream<PipelineEvent>
    private let durableContinuation: AsyncStream<PipelineEvent>.Continuation
    /// Centrals' accepted writes, to hand back to `handle(_:)` (the `run` loop does).
    public nonisolated var centralWrites: AsyncStream<CentralWrite> { values.writes }

    struct SensorRoute: Hashable {
        let sensor: String
        let channel: String
    }

    public init(
        layout: GATTLayout, peripheral: Peripheral, publishesEvents: Bool, timing: Timing = .realTime,
        clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        logger: Logger,
        driveOutput: @escaping @Sendable (String, Bool) async throws -> Void
    ) {
        self.layout = layout
        self.peripheral = peripheral
        self.timing = timing
        self.clock = clock
        origin = clock()
        self.logger = logger
        self.driveOutput = driveOutput
        values = CharacteristicValues(logger: logger)
        self.publishesEvents = publishesEvents
        (events, eventContinuation) = AsyncStream.makeStream(
            of: PipelineEvent.self,
            bufferingPolicy: .bufferingNewest(publishesEvents ? Self.eventBufferSize : 0))
        (durableEvents, durableContinuation) = AsyncStream.makeStream(
            of: PipelineEvent.self, bufferingPolicy: publishesEvents ? .unbounded : .bufferingNewest(0))
        for (ref, characteristic) in layout.characteristics {
            engine.configure(ref, policy: characteristic.config.notify)
            switch characteristic.config.source {
            case .sensor(let id, let reading):
                sensorRoutes[SensorRoute(sensor: id, channel: reading.rawValue), default: []].append(ref)
            case .fixed(let value), .written(let value):
                // Checked against the encoding by the configuration layer.
                if let sample = try? NotifySample(value, encoding: characteristic.config.encoding) {
                    latest[ref] = sample.bytes
                    engine.update(ref, sample: sample, now: .zero)
                    configuredValues[ref] = .valueChanged(ref, sample.bytes)
                }
            case .mqtt:
                break
            }
        }
        for key in sensorRoutes.keys { sensorRoutes[key]?.sort() }
    }

    private var now: Duration { clock() - origin }

    // MARK: Publishing

    /// Publishes every configured service and serves reads and writes from this pipeline. Called
    /// when the peripheral reaches `poweredOn` (CoreBluetooth's rule: publish once powered on);
    /// values that arrived before are served from the start.
    func publish() async throws {
        await peripheral.setRequestHandlers(values.handlers)
        var ids: [String: GATTServiceID] = [:]
        for index in layout.publishingOrder {
            let service = try layout.service(index) { ids[$0] }
            let publishedService = try await peripheral.add(service)
            if let name = layout.serviceName(index) { ids[name] = publishedService.id }
            for (position, characteristic) in publishedService.characteristics.enumerated() {
                guard let ref = layout.ref(service: index, characteristic: position),
                    let config = layout.characteristics[ref]?.config
                else { continue }
                published[ref] = characteristic
                refsByValueHandle[characteristic.valueHandle] = ref
                let triggerPosition = service.characteristics[position].descriptors.firstIndex {
                    $0.uuid == ESTriggerSetting.descriptorUUID && $0.value == .dynamic
                }
                values.register(
                    ref, valueHandle: characteristic.valueHandle, encoding: config.encoding,
                    initial: latest[ref] ?? [], triggerPosition: triggerPosition)
            }
        }
        logger.info(
            "services published",
            metadata: [
                "services": "\(layout.publishingOrder.count)",
                "characteristics": "\(published.count)"
            ])
    }

    /// The published characteristic of `ref` (after `publish()`).
    public func publishedCharacteristic(_ ref: CharacteristicRef) -> PublishedCharacteristic? { published[ref] }

    /// The value reads get now.
    public func currentBytes(_ ref: CharacteristicRef) -> [UInt8]? { latest[ref] }

    // MARK: Inputs

    /// A sensor reading: becomes the value of every characteristic carrying it. Synchronous: a
    /// sensor's runner hands its readings over on the event loop, where this actor runs.
    public func sensorValue(_ reading: SensorSample) {
        guard let refs = sensorRoutes[SensorRoute(sensor: reading.sensor, channel: reading.channel)] else { return }
        let value: Values.SensorValue
        switch reading.reading {
        case .number(let number): value = .number(number)
        case .bool(let flag): value = .bool(flag)
        case .failure(let failure):
            logger.warning(
                "sensor reading failed",
                metadata: [
                    "sensor": "\(reading.sensor)",
                    "channel": "\(reading.channel)",
                    "reason": "\(failure)"
                ])
            return
        }
        for ref in refs { setValue(value, of: ref) }
        drain()
    }

    /// A sensor's running total of lost GPIO events, for the `state` counters
    /// (`<sensor>.lost_events`, and `lost_events` over all sensors).
    public func lostEvents(sensor: String, total: Int) {
        lostEventTotals[sensor] = total
    }

    /// A value from MQTT (`/set`, or a characteristic sourced from a topic), already checked
    /// against the characteristic's format. An output sensor's characteristic drives its line
    /// instead: the sensor's own reading then becomes the value.
    /// Returns why an output could not be driven, if it could not.
    @discardableResult
    public func externalValue(_ value: Values.SensorValue, for ref: CharacteristicRef) async -> String? {
        if let sensor = layout.characteristics[ref]?.outputSensor {
            return await drive(sensor, value)
        }
        setValue(value, of: ref)
        drain()
        return nil
    }

    /// A central's accepted write (from `centralWrites`).
    public func handle(_ write: CentralWrite) async {
        latest[write.ref] = write.bytes
        durableContinuation.yield(.written(write.ref, write.central, write.bytes, write.kind))
        if let sensor = layout.characteristics[write.ref]?.outputSensor {
            if let failure = await drive(sensor, write.value) {
                durableContinuation.yield(.outputFailed(write.ref, write.central, reason: failure))
            }
            return
        }
        setValue(write.value, of: write.ref)
        drain()
    }

    /// What the peripheral reports: connections, subscriptions, and room on the link.
    public func handle(_ event: PeripheralEvent) async {
        switch event {
        case .centralConnected(let central):
            let mtu = await peripheral.maximumUpdateValueLength(for: central).map { $0 + 3 } ?? 23
            durableContinuation.yield(.centralConnected(central, mtu: mtu))
        case .centralDisconnected(let central):
            engine.disconnect(central)
            fullCentrals.remove(central)
            durableContinuation.yield(.centralDisconnected(central))
        case .subscribed(let central, let characteristic):
            guard let ref = refsByValueHandle[characteristic.valueHandle] else { return }
            // The event does not say which the central enabled; notification when offered.
            let kind: UpdateKind = characteristic.properties.contains(.notify) ? .notification : .indication
            // Triggers first: they judge the current value the subscription may start with.
            if let triggers = serverTriggers[ref] { engine.setTriggers(triggers, for: central, on: ref, now: now) }
            engine.subscribe(central, to: ref, kind: kind, now: now)
            durableContinuation.yield(.subscribed(ref, central, kind))
        case .unsubscribed(let central, let characteristic):
            guard let ref = refsByValueHandle[characteristic.valueHandle] else { return }
            engine.unsubscribe(central, from: ref)
            durableContinuation.yield(.unsubscribed(ref, central))
        case .readyToUpdateSubscribers:
            fullCentrals = []
        case .stateChanged(let state):
            peripheralState = state
            eventContinuation.yield(status)
            guard state == .poweredOn, published.isEmpty else { return }
            do {
                try await publish()
            } catch {
                logger.error("publishing the GATT services failed", metadata: ["error": "\(error)"])
            }
            return
        case .maximumUpdateValueLengthChanged(let central, let length):
            durableContinuation.yield(.mtuChanged(central, mtu: length + 3))
            return
        case .securityChanged(let central, let security):
            durableContinuation.yield(.securityChanged(central, security))
            return
        case .serviceAdded, .serviceRemoved:
            return
        }
        drain()
    }

    /// A central's accepted trigger descriptor write (from `triggerChanges`): the characteristic's
    /// triggers for every central subscribed to it now and later.
    public func handle(_ change: TriggerChange) {
        serverTriggers[change.ref] = change.triggers
        for central in engine.subscribers(of: change.ref).sorted() {
            engine.setTriggers(change.triggers, for: central, on: change.ref, now: now)
        }
        logger.info(
            "notify triggers changed",
            metadata: [
                "characteristic": "\(change.ref)", "central": "\(change.central)",
                "triggers": "\(change.triggers.map { "\($0.settings) \($0.logic)" } ?? "the configured policy")"
            ])
        drain()
    }

    /// Accepted trigger descriptor writes, to hand back to `handle(_:)` (the `run` loop does).
    public nonisolated var triggerChanges: AsyncStream<TriggerChange> { values.triggerChanges }

    /// A reload's notify policies, from `services` laid out as this pipeline's (`ConfigChanges`
    /// found only policies changed): every subscriber gets each characteristic's new policy from
    /// its next value on, on its connection as it is.
    public func changeNotifyPolicies(_ services: [ServiceConfig]) {
        for ref in layout.characteristics.keys {
            engine.configure(ref, policy: services[ref.service].characteristics[ref.characteristic].notify)
        }
        advance()
    }

    /// Handles the engine's deadlines up to now (the timer calls this; tests call it after moving
    /// their clock).
    public func advance() {
        engine.advance(to: now)
        drain()
    }

    /// The per-characteristic and per-central counters, for the log line and MQTT `state`.
    public var statistics: NotifyStatistics<CentralID, CharacteristicRef> { engine.statistics }

    /// When the engine next has work (relative to the pipeline's start).
    public var nextDeadline: Duration? { engine.nextDeadline }

    /// Consumes the peripheral's events and the centrals' writes until cancelled, and logs the
    /// counters every `statisticsInterval`.
    public func run(statisticsInterval: Duration) async {
        eventContinuation.yield(status)
        for ref in configuredValues.keys.sorted() {
            eventContinuation.yield(configuredValues[ref]!)
        }
        await withDiscardingTaskGroup { group in
            // Each stream is consumed isolated to the pipeline, so an element is handled on the
            // event loop where it was yielded, without a hop.
            group.addTask { await self.consumePeripheralEvents() }
            group.addTask { await self.consumeCentralWrites() }
            group.addTask { await self.consumeTriggerChanges() }
            group.addTask {
                while (try? await Task.sleep(for: statisticsInterval)) != nil {
                    await self.logStatistics()
                }
            }
        }
        timer?.disarm()
    }

    private func consumePeripheralEvents() async {
        for await event in peripheral.events { await handle(event) }
    }

    private func consumeCentralWrites() async {
        for await write in values.writes { await handle(write) }
    }

    private func consumeTriggerChanges() async {
        for await change in values.triggerChanges { handle(change) }
    }

    /// The host started or stopped advertising (for the `status` event).
    public func advertisingChanged(_ isAdvertising: Bool) {
        guard isAdvertising != advertising else { return }
        advertising = isAdvertising
        eventContinuation.yield(status)
    }

    public func logStatistics() {
        logger.info("notify counters", metadata: ["counters": "\(engine.statistics.logLine)"])
        eventContinuation.yield(status)
    }

    /// The `status` event now: totals (`sent`, `coalesced`, `suppressed`, `dropped`, `centrals`,
    /// `waiting`), then each counter per characteristic (`<service>/<characteristic>.sent`) and
    /// per connected central (`central#1.sent`).
    var status: PipelineEvent {
        let statistics = engine.statistics
        let fields: [(String, KeyPath<NotifyCounters, Int>)] = [
            ("sent", \.sent), ("coalesced", \.coalesced), ("suppressed", \.suppressed), ("dropped", \.dropped)
        ]
        var counters = [
            "centrals": statistics.perCentral.count, "waiting": statistics.valuesWaiting,
            "lost_events": lostEventTotals.values.reduce(0, +)
        ]
        for (sensor, total) in lostEventTotals { counters["\(sensor).lost_events"] = total }
        for (name, path) in fields {
            counters[name] = statistics.perCharacteristic.values.reduce(0) { $0 + $1[keyPath: path] }
            for (ref, values) in statistics.perCharacteristic { counters["\(ref).\(name)"] = values[keyPath: path] }
            for (central, values) in statistics.perCentral { counters["\(central).\(name)"] = values[keyPath: path] }
        }
        return .status(peripheral: peripheralState.rawValue, advertising: advertising, counters: counters)
    }

    /// Stops the timer and ends the event stream, after a last counters line (the totals of the run).
    public func finish() {
        logStatistics()
        timer?.disarm()
        eventContinuation.finish()
        durableContinuation.finish()
    }

    // MARK: Plumbing

    private func setValue(_ value: Values.SensorValue, of ref: CharacteristicRef) {
        guard let characteristic = layout.characteristics[ref] else { return }
        let adapted = Self.adapt(value, to: characteristic.config.encoding.format)
        let sample: NotifySample
        do throws(ValueError) {
            sample = try NotifySample(adapted, encoding: characteristic.config.encoding)
        } catch {
            logger.warning(
                "value not encodable",
                metadata: [
                    "characteristic": "\(ref)", "value": "\(value)",
                    "reason": "\(error)"
                ])
            return
        }
        latest[ref] = sample.bytes
        if let publishedCharacteristic = published[ref] {
            values.set(sample.bytes, valueHandle: publishedCharacteristic.valueHandle)
        }
        engine.update(ref, sample: sample, now: now)
        // Skipped without MQTT: the stream keeps nothing then, but a yield still costs a lock
        // and an event built for nobody, on every value.
        if publishesEvents { eventContinuation.yield(.valueChanged(ref, sample.bytes)) }
    }

    /// Booleans on numeric characteristics are 0 and 1; numbers on boolean ones are "non-zero".
    static func adapt(_ value: Values.SensorValue, to format: ValueFormat) -> Values.SensorValue {
        switch (value, format) {
        case (.bool(let flag), _) where format.isNumeric: .number(flag ? 1 : 0)
        case (.number(let number), .bool): .bool(number != 0)
        default: value
        }
    }

    /// Drives an output's line; returns why it could not, after logging it.
    private func drive(_ sensor: String, _ value: Values.SensorValue) async -> String? {
        guard let level = Self.adapt(value, to: .bool).numericValue.map({ $0 != 0 }) else {
            logger.warning("output needs a boolean", metadata: ["sensor": "\(sensor)", "value": "\(value)"])
            return "output \(sensor) needs a boolean, got \(value)"
        }
        do {
            try await driveOutput(sensor, level)
            return nil
        } catch {
            logger.error("driving output failed", metadata: ["sensor": "\(sensor)", "error": "\(error)"])
            return "driving output \(sensor) failed: \(error)"
        }
    }

    /// Hands waiting values to the link until it is full or nothing waits, then re-arms the timer.
    /// Synchronous (the peripheral shares this actor's executor, the event loop), so nothing else
    /// runs on the pipeline in between.
    private func drain() {
        for central in engine.centralsWithPendingTransmissions.sorted() where !fullCentrals.contains(central) {
            while !fullCentrals.contains(central), let transmission = engine.nextTransmission(for: central) {
                guard transmit(transmission) else {
                    // Back to the engine's slot, where a newer value replaces it.
                    engine.transmissionRefused(transmission)
                    break
                }
            }
        }
        armTimer()
    }

    /// Sends one update; false (and the central is full) when the link has no room for it.
    private func transmit(_ transmission: Transmission<CentralID, CharacteristicRef>) -> Bool {
        guard let characteristic = published[transmission.characteristic] else { return true }
        do {
            let sent = try peripheral.onLoop(with: (transmission, characteristic)) { peripheral, update in
                try peripheral.updateValue(
                    update.0.sample.bytes, for: update.1, onSubscribedCentrals: [update.0.central])
            }
            if !sent {
                fullCentrals.insert(transmission.central)
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

    /// Arms the timer for the engine's next deadline. A timer already armed for that deadline or
    /// an earlier one stays: firing early is harmless (it re-arms for what is due then), and a
    /// fast line's values move the deadline with every value (between a held value's deadline and
    /// none), so re-arming on every move would be work per value for nothing.
    private func armTimer() {
        guard timing == .realTime, let deadline = engine.nextDeadline else { return }
        if let armed = timerDeadline, armed <= deadline { return }
        timerDeadline = deadline
        if timer == nil {
            timer = EventLoop.shared.makeTimer { [weak self] in self?.onLoop { $0.timerFired() } }
        }
        timer?.arm(after: deadline - now)
    }

    private func timerFired() {
        timerDeadline = nil
        advance()
    }
}
