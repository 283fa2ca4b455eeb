import BluetoothGATT
import Config
import EventLoop
import Logging
import Notify
import Sensors
import Values

/// The value pipeline: sensor readings (and MQTT values, and centrals' writes) become each
/// characteristic's current value, served to reads, and go through the `NotifyEngine` to every
/// subscribed central by `Peripheral.updateValue(_:for:onSubscribedCentrals:)`.
///
/// An actor that connects stages with one job each, all owned by it and called on its executor:
/// `ValueRouter` (which characteristics carry a reading, and its bytes in each one's format),
/// `CharacteristicValues` (the one store of current values, served to reads and consulted by the
/// notify engine, and the check of centrals' writes), `TriggerSettings` (the ESS trigger
/// descriptors centrals write, their file and restoration), `GATTPublication` (the services as
/// published), `NotifyDriver` (the notify engine, backpressure and its deadline timer, sending
/// through the peripheral) and `PipelineStatus` (MQTT's `state` counters). The pipeline itself keeps only what joins them:
/// the sink of the MQTT mirror's events and the way to an output's line.
public actor ValuePipeline {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    /// `.realTime` arms a timer for the engine's deadlines; `.manual` leaves time to the caller's
    /// `advance()` (tests, with a manual clock).
    public enum Timing: Sendable { case realTime, manual }

    /// The GATT layout served: the configuration's, or a reload's since (`changeLayout`).
    public private(set) var layout: GATTLayout
    private let peripheral: Peripheral
    private let logger: Logger
    /// Drives an output sensor's line (`SensorRunner.write`).
    private let driveOutput: @Sendable (String, Bool) async throws -> Void
    private var router: ValueRouter
    private let values: CharacteristicValues
    private let triggers: TriggerSettings
    private let publication: GATTPublication
    private let notifier: NotifyDriver
    private var status = PipelineStatus()
    /// The MQTT mirror's (`setEventSink`); without one (no MQTT) no event is even built. Nothing
    /// waits between the two: the mirror publishes a value or appends a durable event (a write,
    /// a subscription, a central and its MTU and security) to its persistent outbox before the
    /// call that produced it returns, so none waits in memory here for a slow consumer.
    private var eventSink: PipelineEventSink?
    /// Centrals' accepted writes, to hand back to `handle(_:)` (the `run` loop does).
    public nonisolated var centralWrites: AsyncStream<CentralWrite> { values.writes }
    /// Accepted trigger descriptor writes, to hand back to `handle(_:)` (the `run` loop does).
    public nonisolated var triggerChanges: AsyncStream<TriggerChange> { triggers.changes }

    /// `triggerFile`: where the trigger settings centrals write are kept across restarts (nil:
    /// for this run only).
    public init(
        layout: GATTLayout, peripheral: Peripheral, timing: Timing = .realTime,
        clock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        triggerFile: TriggerFile? = nil,
        logger: Logger,
        driveOutput: @escaping @Sendable (String, Bool) async throws -> Void
    ) {
        self.layout = layout
        self.peripheral = peripheral
        self.logger = logger
        self.driveOutput = driveOutput
        router = ValueRouter(layout: layout)
        let values = CharacteristicValues(layout: layout, logger: logger)
        let triggers = TriggerSettings(layout: layout, file: triggerFile, logger: logger)
        self.values = values
        self.triggers = triggers
        let publication = GATTPublication()
        self.publication = publication
        let wake = WakeTarget()
        notifier = NotifyDriver(
            policies: layout.characteristics.mapValues(\.config.notify), values: values,
            triggers: { [triggers] in triggers.triggerSet(of: $0) },
            timer: timing == .realTime ? DeadlineTimer { _ in wake.pipeline?.onLoop { $0.advance() } } : nil,
            clock: clock, logger: logger,
            send: { [peripheral] transmission in
                // Subscriptions come only from published characteristics; nothing to send on else.
                guard let characteristic = publication.characteristics[transmission.characteristic] else { return true }
                return try peripheral.onLoop(with: (transmission, characteristic)) { peripheral, update in
                    try peripheral.updateValue(
                        update.0.sample.bytes, for: update.1, onSubscribedCentral: update.0.central)
                }
            })
        for (ref, sample) in router.configuredSamples {
            values.set(sample, of: ref)
            notifier.update(ref, sample: sample)
        }
        wake.pipeline = self
    }

    /// The MQTT mirror's sink, before `run` (whose first events, the status and the configured
    /// values, it must get); nil stops the events.
    public func setEventSink(_ sink: PipelineEventSink?) {
        eventSink = sink
    }

    // MARK: Publishing

    /// Publishes every configured service and serves reads and writes from this pipeline. Called
    /// when the peripheral reaches `poweredOn` (CoreBluetooth's rule: publish once powered on);
    /// values that arrived before are served from the start.
    func publish() async throws {
        await peripheral.setRequestHandlers(values.handlers(triggers: triggers))
        try await publication.publish(layout, on: peripheral, values: values, triggers: triggers, logger: logger)
    }

    /// A reload's GATT layout (`ConfigChanges` found the services changed). The services that
    /// changed (`GATTLayoutChange`) are removed and published anew, and every central that enabled
    /// Service Changed gets one indication over the handles they took; the characteristics of the
    /// others keep their handles, subscriptions, values and counters. A new characteristic starts
    /// with its configured value, or its sensor's reading among `currentReadings` (the running
    /// sensors' latest; presses excepted), or none until its source gives one. Before the services are first
    /// published (the controller not on yet) `publish()` will publish the new layout; while the
    /// controller is off after that, nothing changes and this throws.
    func changeLayout(to newLayout: GATTLayout, currentReadings: [SensorSample]) async throws -> GATTLayoutChange {
        if publication.services != nil, status.peripheralState != .poweredOn {
            throw PeripheralError.notPoweredOn(status.peripheralState)
        }
        let change = try GATTLayoutChange(from: publication.services ?? [], to: newLayout)
        let keptRefs = Set(change.kept.flatMap(\.refs))
        for ref in layout.characteristics.keys where !keptRefs.contains(ref) { notifier.forget(ref) }
        layout = newLayout
        router = ValueRouter(layout: newLayout)
        values.relayout(newLayout, keeping: keptRefs)
        triggers.relayout(newLayout, keeping: keptRefs)
        for (ref, characteristic) in newLayout.characteristics {
            notifier.configure(ref, policy: characteristic.config.notify)
        }
        for (ref, sample) in router.configuredSamples where !keptRefs.contains(ref) {
            values.set(sample, of: ref)
            notifier.update(ref, sample: sample)
        }
        // A press is an event, not a state: the last one is not a new characteristic's value.
        for sample in currentReadings where SensorReading(rawValue: sample.channel)?.isEvent != true {
            guard let value = ValueRouter.value(of: sample.reading) else { continue }
            for ref in router.characteristics(carrying: sample.sensor, channel: sample.channel) ?? []
            where !keptRefs.contains(ref) {
                setValue(value, of: ref)
            }
        }
        guard publication.services != nil else { return change }
        await peripheral.holdServiceChanged()
        do {
            try await publication.change(to: newLayout, change, on: peripheral, values: values, triggers: triggers)
        } catch {
            await peripheral.releaseServiceChanged()
            throw error
        }
        await peripheral.releaseServiceChanged()
        logger.info(
            "services changed",
            metadata: [
                "kept": "\(change.kept.count)", "removed": "\(change.removed.count)",
                "published": "\(change.added.count)"
            ])
        notifier.drain()
        return change
    }

    /// The published characteristic of `ref` (after `publish()`).
    public func publishedCharacteristic(_ ref: CharacteristicRef) -> PublishedCharacteristic? {
        publication.characteristics[ref]
    }

    /// The value reads get now.
    public func currentBytes(_ ref: CharacteristicRef) -> [UInt8]? { values.bytes(of: ref) }

    // MARK: Inputs

    /// A sensor reading: becomes the value of every characteristic carrying it. Synchronous: a
    /// sensor's runner hands its readings over on the event loop, where this actor runs.
    public func sensorValue(_ reading: SensorSample) {
        guard let refs = router.characteristics(carrying: reading.sensor, channel: reading.channel) else { return }
        guard let value = ValueRouter.value(of: reading.reading) else {
            guard case .failure(let failure) = reading.reading else { return }
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
        notifier.drain()
    }

    /// A sensor's readings stopped being current (`reason`), or are again (nil): every
    /// characteristic carrying it is marked so for MQTT (its availability), and the notify
    /// heartbeat stops resending the value it has until a new one comes.
    public func sensorAvailability(sensor: String, unavailable reason: String?) {
        guard status.sensorAvailability(sensor: sensor, unavailable: reason) else { return }
        if let reason {
            logger.warning("sensor unavailable", metadata: ["sensor": "\(sensor)", "reason": "\(reason)"])
        } else {
            logger.notice("sensor available again", metadata: ["sensor": "\(sensor)"])
        }
        for ref in router.characteristics(carrying: sensor) {
            if reason != nil { notifier.markStale(ref) }
            eventSink?(.availabilityChanged(ref, unavailable: reason))
        }
        eventSink?(statusEvent)
    }

    /// Why each unavailable sensor is, by sensor.
    public var unavailableSensors: [String: String] { status.unavailableSensors }

    /// A sensor's running total of lost GPIO events, for the `state` counters
    /// (`<sensor>.lost_events`, and `lost_events` over all sensors).
    public func lostEvents(sensor: String, total: Int) {
        status.lostEvents(sensor: sensor, total: total)
    }

    /// A value from MQTT (`/set`, or a characteristic sourced from a topic), already checked
    /// against the characteristic's format. An output sensor's characteristic drives its line
    /// instead: the sensor's own reading then becomes the value.
    /// Returns why an output could not be driven, if it could not.
    @discardableResult
    public func externalValue(_ value: Values.SensorValue, for ref: CharacteristicRef) async -> String? {
        if let sensor = router.outputSensor(of: ref) {
            return await drive(sensor, value)
        }
        setValue(value, of: ref)
        notifier.drain()
        return nil
    }

    /// A central's accepted write (from `centralWrites`), already the current value in the store.
    public func handle(_ write: CentralWrite) async {
        eventSink?(.written(write.ref, write.central, write.bytes, write.kind))
        if let sensor = router.outputSensor(of: write.ref) {
            if let failure = await drive(sensor, write.value) {
                eventSink?(.outputFailed(write.ref, write.central, reason: failure))
            }
            return
        }
        setValue(write.value, of: write.ref)
        notifier.drain()
    }

    /// What the peripheral reports: connections, subscriptions, and room on the link.
    public func handle(_ event: PeripheralEvent) async {
        switch event {
        case .centralConnected(let central):
            let mtu = await peripheral.maximumUpdateValueLength(for: central).map { $0 + 3 } ?? 23
            eventSink?(.centralConnected(central, mtu: mtu))
        case .centralDisconnected(let central):
            notifier.disconnect(central)
            eventSink?(.centralDisconnected(central))
            // The departed central's counters are gone: `state` says so now, not at the next tick.
            eventSink?(statusEvent)
        case .subscribed(let central, let characteristic):
            guard let ref = publication.ref(of: characteristic) else { return }
            // The event does not say which the central enabled; notification when offered.
            let kind: UpdateKind = characteristic.properties.contains(.notify) ? .notification : .indication
            notifier.subscribe(central, to: ref, kind: kind)
            eventSink?(.subscribed(ref, central, kind))
        case .unsubscribed(let central, let characteristic):
            guard let ref = publication.ref(of: characteristic) else { return }
            notifier.unsubscribe(central, from: ref)
            eventSink?(.unsubscribed(ref, central))
        case .readyToUpdateSubscribers:
            notifier.linkReady()
        case .stateChanged(let state):
            status.peripheralChanged(state)
            eventSink?(statusEvent)
            guard state == .poweredOn, publication.services == nil else { return }
            do {
                try await publish()
            } catch {
                logger.error("publishing the GATT services failed", metadata: ["error": "\(error)"])
            }
            return
        case .maximumUpdateValueLengthChanged(let central, let length):
            eventSink?(.mtuChanged(central, mtu: length + 3))
            return
        case .securityChanged(let central, let security):
            eventSink?(.securityChanged(central, security))
            return
        case .writeCommandRefused(let central, let handle, let code):
            status.writeCommandRefused()
            logger.debug(
                "write command refused",
                metadata: ["central": "\(central)", "handle": "\(handle)", "reason": "\(code)"])
            return
        case .serviceAdded, .serviceRemoved:
            return
        }
        notifier.drain()
    }

    /// A central's accepted trigger descriptor write (from `triggerChanges`): the characteristic's
    /// triggers for every central subscribed to it now and later.
    public func handle(_ change: TriggerChange) {
        notifier.setTriggers(change.triggers, on: change.ref)
        notifier.drain()
    }

    /// A reload's notify policies, from `services` laid out as this pipeline's (`ConfigChanges`
    /// found only policies changed): every subscriber gets each characteristic's new policy from
    /// its next value on, on its connection as it is.
    public func changeNotifyPolicies(_ services: [ServiceConfig]) {
        for ref in layout.characteristics.keys {
            notifier.configure(ref, policy: services[ref.service].characteristics[ref.characteristic].notify)
        }
        advance()
    }

    /// Handles the engine's deadlines up to now (the timer calls this; tests call it after moving
    /// their clock).
    public func advance() {
        notifier.advance()
    }

    /// The per-characteristic and per-central counters, for the log line and MQTT `state`.
    public var statistics: NotifyStatistics<CentralID, CharacteristicRef> { notifier.statistics }

    /// When the engine next has work (relative to the pipeline's start).
    public var nextDeadline: Duration? { notifier.nextDeadline }

    /// Consumes the peripheral's events and the centrals' writes until cancelled, and logs the
    /// counters every `statisticsInterval`.
    public func run(statisticsInterval: Duration) async {
        eventSink?(statusEvent)
        for (ref, sample) in router.configuredSamples.sorted(by: { $0.key < $1.key }) {
            eventSink?(.valueChanged(ref, sample.bytes))
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
        notifier.stop()
    }

    private func consumePeripheralEvents() async {
        for await event in peripheral.events { await handle(event) }
    }

    private func consumeCentralWrites() async {
        for await write in values.writes { await handle(write) }
    }

    private func consumeTriggerChanges() async {
        for await change in triggers.changes { handle(change) }
    }

    /// The pairing window opened or closed (for the `status` event).
    public func pairingWindowChanged(_ isOpen: Bool) {
        if status.pairingChanged(isOpen) { eventSink?(statusEvent) }
    }

    /// The host started or stopped advertising (for the `status` event).
    public func advertisingChanged(_ isAdvertising: Bool) {
        if status.advertisingChanged(isAdvertising) { eventSink?(statusEvent) }
    }

    public func logStatistics() {
        logger.info("notify counters", metadata: ["counters": "\(notifier.statistics.logLine)"])
        eventSink?(statusEvent)
    }

    /// The `status` event now (`PipelineStatus`).
    var statusEvent: PipelineEvent { status.event(notifier.statistics) }

    /// The characteristics whose sensor is unavailable now, with why (a mirror that starts after
    /// the sensor went stale learns it here).
    public var unavailableCharacteristics: [(CharacteristicRef, String)] {
        status.unavailableSensors.sorted { $0.key < $1.key }.flatMap { sensor, reason in
            router.characteristics(carrying: sensor).map { ($0, reason) }
        }
    }

    /// Stops the timer and the events, after a last counters line (the totals of the run).
    public func finish() {
        logStatistics()
        notifier.stop()
        eventSink = nil
    }

    // MARK: Plumbing

    /// `value` becomes `ref`'s current value and goes to the notify engine and the mirror; the
    /// caller drains.
    private func setValue(_ value: Values.SensorValue, of ref: CharacteristicRef) {
        let sample: NotifySample
        do throws(ValueError) {
            guard let encoded = try router.sample(value, for: ref) else { return }
            sample = encoded
        } catch {
            logger.warning(
                "value not encodable",
                metadata: [
                    "characteristic": "\(ref)", "value": "\(value)",
                    "reason": "\(error)"
                ])
            return
        }
        values.set(sample, of: ref)
        notifier.update(ref, sample: sample)
        // Optional chaining: without MQTT the event is not even built.
        eventSink?(.valueChanged(ref, sample.bytes))
    }

    /// Drives an output's line; returns why it could not, after logging it.
    private func drive(_ sensor: String, _ value: Values.SensorValue) async -> String? {
        guard let level = ValueRouter.outputLevel(value) else {
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

    /// The pipeline as its deadline timer reaches it: made before the pipeline is complete, and
    /// weak, so the timer keeps no finished pipeline alive.
    private final class WakeTarget: @unchecked Sendable {
        // Set once in `init`, before the timer can be scheduled.
        weak var pipeline: ValuePipeline?
    }
}
