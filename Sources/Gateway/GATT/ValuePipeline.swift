import BluetoothGATT
import Config
import EventLoop
import Logging
import LoopClock
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
    public internal(set) var layout: GATTLayout
    let peripheral: Peripheral
    let logger: Logger
    /// Drives an output sensor's line (`SensorRunner.write`).
    private let driveOutput: @Sendable (String, Bool) async throws -> Void
    var router: ValueRouter
    let values: CharacteristicValues
    let triggers: TriggerSettings
    let publication: GATTPublication
    let notifier: NotifyDriver
    var status = PipelineStatus()
    /// The MQTT mirror's (`setEventSink`); without one (no MQTT) no event is even built. Nothing
    /// waits between the two: the mirror publishes a value or appends a durable event (a write,
    /// a subscription, a central and its MTU and security) to its persistent outbox before the
    /// call that produced it returns, so none waits in memory here for a slow consumer.
    var eventSink: PipelineEventSink?
    /// The outputs centrals wrote, driven one after the other (each awaits its sensor's runner).
    private var outputDrives = SerialTasks()

    /// `triggerFile`: where the trigger settings centrals write are kept across restarts (nil:
    /// for this run only).
    public init(
        layout: GATTLayout, peripheral: Peripheral, timing: Timing = .realTime,
        clock: @escaping @Sendable () -> LoopInstant = { EventLoop.now() },
        triggerFile: TriggerFile? = nil,
        logger: Logger,
        driveOutput: @escaping @Sendable (String, Bool) async throws -> Void
    ) {
        self.layout = layout
        self.peripheral = peripheral
        self.logger = logger
        self.driveOutput = driveOutput
        router = ValueRouter(layout: layout)
        let values = CharacteristicValues(layout: layout, samples: router.configuredSamples, logger: logger)
        let triggers = TriggerSettings(layout: layout, file: triggerFile, logger: logger)
        self.values = values
        self.triggers = triggers
        let publication = GATTPublication()
        self.publication = publication
        // The timer reaches the pipeline, which it is made before, through this.
        let wake = BackReference<ValuePipeline>()
        notifier = NotifyDriver(
            policies: layout.characteristics.mapValues(\.config.notify), values: values,
            triggers: { [triggers] in triggers.triggerSet(of: $0) },
            timer: timing == .realTime ? DeadlineTimer { _ in wake.target?.onLoop { $0.advance() } } : nil,
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
            notifier.update(ref, sample: sample)
        }
        wake.target = self
    }

    /// The MQTT mirror's sink, before `run` (whose first events, the status and the configured
    /// values, it must get); nil stops the events.
    public func setEventSink(_ sink: PipelineEventSink?) {
        eventSink = sink
    }

    /// The value reads get now.
    public func currentBytes(_ ref: CharacteristicRef) -> [UInt8]? { values.bytes(of: ref) }

    // MARK: Inputs

    /// A sensor reading: becomes the value of every characteristic carrying it. Synchronous: a
    /// sensor's runner hands its readings over on the event loop, where this actor runs.
    public func sensorValue(_ reading: SensorSample) {
        guard let route = router.route(carrying: reading.sensor, channel: reading.channel) else { return }
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
        // By position: the list taken out of the router was retained and released for every value.
        for position in router.characteristicPositions(on: route) {
            setValue(value, of: router.characteristic(at: position, on: route))
        }
        notifier.drain()
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

    /// What a central's request changed, once the peripheral has answered it (the request
    /// handlers' `applied`, in the same call): the values it wrote, already current in the store,
    /// and the trigger descriptors.
    func writesApplied() {
        for write in values.takeAcceptedWrites() { handle(write) }
        for change in triggers.takeChanges() { notifier.setTriggers(change.triggers, on: change.ref) }
        notifier.drain()
    }

    /// A central's accepted write: to MQTT, and to the other subscribers or the output's line.
    private func handle(_ write: CentralWrite) {
        eventSink?(.written(write.ref, write.central, write.bytes, write.kind))
        guard let sensor = router.outputSensor(of: write.ref) else {
            setValue(write.value, of: write.ref)
            return
        }
        // The write is answered; the line is driven after it, in the order of the writes.
        outputDrives.enqueue { [self] in await drive(sensor, writtenBy: write) }
    }

    /// Drives `sensor`'s line as a central's `write` asks; a failure goes to the MQTT mirror.
    private func drive(_ sensor: String, writtenBy write: CentralWrite) async {
        if let failure = await drive(sensor, write.value) {
            eventSink?(.outputFailed(write.ref, write.central, reason: failure))
        }
    }

    /// Returns once the outputs centrals wrote so far are driven (or have failed).
    public func outputsDriven() async {
        await outputDrives.idle()
    }

    /// Handles the engine's deadlines up to now (the timer calls this; tests call it after moving
    /// their clock).
    public func advance() {
        notifier.advance()
    }

    /// Logs the counters every `statisticsInterval` until cancelled (the peripheral's events come
    /// through `attach`).
    public func run(statisticsInterval: Duration) async {
        eventSink?(statusEvent)
        for (ref, sample) in router.configuredSamples.sorted(by: { $0.key < $1.key }) {
            eventSink?(.valueChanged(ref, sample.bytes))
        }
        while (try? await Task.sleep(for: statisticsInterval)) != nil {
            logStatistics()
        }
        notifier.stop()
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
    func setValue(_ value: Values.SensorValue, of ref: CharacteristicRef) {
        guard let encoding = router.encoding(of: ref) else { return }
        let sample: NotifySample
        do throws(ValueError) {
            sample = try ValueRouter.sample(value, encoding: encoding)
        } catch {
            logger.warning(
                "value not encodable",
                metadata: [
                    "characteristic": "\(ref)", "value": "\(value)",
                    "reason": "\(error)"
                ])
            return
        }
        // The store takes the sample last, moved in rather than copied (a copy retained its
        // bytes and released them again). Nothing reads the store before this call returns:
        // the engine is handed the sample, and the MQTT mirror asks the pipeline later.
        notifier.update(ref, sample: sample)
        // Optional chaining: without MQTT the event is not even built.
        eventSink?(.valueChanged(ref, sample.bytes))
        values.set(sample, of: ref)
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
}
