import BluetoothGATT
import BluetoothHost
import Config
import EventLoop
import FoundationEssentials
import Logging
import MQTTMirror
import MQTTService
import StateFile

/// Runs the MQTT mirror for the gateway: pipeline events in, `/set` and source payloads out
/// through `MirrorBridge`, and the `state` topic (peripheral state, counters) refreshed with
/// every change of centrals and every statistics interval.
///
/// A reload that changes the `mqtt` section or the services replaces the mirror in place
/// (`replace`): the old one says `offline` and disconnects, the new one connects with the new
/// settings and topics and starts from the gateway's state now (values, centrals, subscriptions).
///
/// Durable events (writes, centrals, subscriptions, output failures) are never thrown away while
/// the mirror is configured: a mirror whose connection could not start still queues them in the
/// outbox (`MQTTMirrorService.startFailure`), and during a replace the old mirror takes them until
/// the new one, which delivers the same outbox, is made.
actor MirrorRunner {
    /// On the event loop with the pipeline and the mirror service: forwarding a value hops nowhere.
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    /// A class: the event path takes it out of `running` for every value, and a struct's copy
    /// would retain each of its references.
    private final class Running: Sendable {
        let service: MQTTMirrorService
        let bridge: MirrorBridge
        let task: Task<Void, Never>

        init(service: MQTTMirrorService, bridge: MirrorBridge, task: Task<Void, Never>) {
            self.service = service
            self.bridge = bridge
            self.task = task
        }
    }

    private let pipeline: ValuePipeline
    private let peripheral: Peripheral
    private let host: PeripheralHost
    private let address: @Sendable (CentralID) -> String
    private let logger: Logger
    /// Writes the outbox's compactions and fsyncs and the discovery record.
    private let stateWriter: StateFileWriter
    /// Tells systemd's status how the broker connection is (`ReadinessReporter.mqttChanged`).
    private let connectionChanged: @Sendable (String?) -> Void
    private var running: Running?
    /// Why it is off (`isOff`): the error its last start met.
    private var offReason: String?
    /// Whether `offReason` has been logged since the mirror went off (events it cannot queue).
    private var reportedLostEvents = false
    private var mqtt: MQTTConfig

    init(
        config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout, pipeline: ValuePipeline,
        peripheral: Peripheral, host: PeripheralHost,
        address: @escaping @Sendable (CentralID) -> String, stateWriter: StateFileWriter, logger: Logger,
        connectionChanged: @escaping @Sendable (String?) -> Void = { _ in }
    ) {
        self.stateWriter = stateWriter
        self.connectionChanged = connectionChanged
        self.pipeline = pipeline
        self.peripheral = peripheral
        self.host = host
        self.address = address
        self.logger = logger
        self.mqtt = mqtt
        do {
            let (service, bridge) = try Self.make(
                config: config, mqtt: mqtt, layout: layout, pipeline: pipeline, address: address,
                stateWriter: stateWriter, logger: logger, connectionChanged: connectionChanged)
            running = Running(service: service, bridge: bridge, task: Self.run(service))
            if let failure = service.startFailure {
                offReason = Self.wentOff(failure, queuing: true, logger: logger, connectionChanged: connectionChanged)
            }
        } catch {
            offReason = Self.wentOff(error, queuing: false, logger: logger, connectionChanged: connectionChanged)
        }
    }

    /// The gateway runs without a connection (BLE and sensors need no broker), as after a reload
    /// that could not start it; the next reload tries again. Returns the reason, for `offReason`.
    private static func wentOff(
        _ error: any Error, queuing: Bool, logger: Logger, connectionChanged: @Sendable (String?) -> Void
    ) -> String {
        let events = queuing ? "durable events wait in the outbox" : "durable events are not kept"
        logger.error("the MQTT mirror did not start: \(error); it is off until a reload starts it (\(events))")
        connectionChanged("off until a reload starts it (\(error))")
        return "\(error)"
    }

    /// It could not start (or start again after a reload): a reload starts it even when the
    /// `mqtt` section did not change.
    var isOff: Bool { running == nil || running?.service.startFailure != nil }

    private static func run(_ service: MQTTMirrorService) -> Task<Void, Never> {
        Task(executorPreference: EventLoop.shared) { await service.run() }
    }

    private static func make(
        config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout, pipeline: ValuePipeline,
        address: @escaping @Sendable (CentralID) -> String, stateWriter: StateFileWriter, logger: Logger,
        connectionChanged: @escaping @Sendable (String?) -> Void
    ) throws -> (MQTTMirrorService, MirrorBridge) {
        let bridge = MirrorBridge(layout: layout, address: address)
        let service = try MQTTMirrorService(
            client: MirrorMapping.clientConfiguration(mqtt),
            mirror: MirrorMapping.mirrorConfiguration(config, mqtt: mqtt, layout: layout),
            stateDirectory: URL(fileURLWithPath: config.stateDirectory), outboxCapacity: mqtt.outboxLimit,
            stateWriter: stateWriter, logger: logger,
            onSet: { id, payload in await bridge.set(id, payload: payload, pipeline: pipeline) },
            onSourceValue: { ids, payload in
                await bridge.sourceValue(ids, payload: payload, pipeline: pipeline, logger: logger)
            },
            onConnectionChange: connectionChanged)
        return (service, bridge)
    }

    /// From now on the pipeline hands each event to the mirror running at the time, in the call
    /// that produced it (the pipeline, this runner and the mirror service all run on the event
    /// loop). Before the pipeline runs, so its first events find the mirror.
    func attach() async {
        await pipeline.setEventSink { [self] event in
            onLoop(with: event) { runner, event in runner.forward(event) }
        }
    }

    private func forward(_ event: PipelineEvent) {
        guard let running else {
            // Only an outbox that cannot be opened leaves no mirror to queue in.
            if !reportedLostEvents, let offReason {
                logger.error("MQTT events are not kept while the mirror is off: \(offReason)")
                reportedLostEvents = true
            }
            return
        }
        // An event of a characteristic a reload removed (its layout's, before the new one's) has
        // no topic.
        guard let mirrored = running.bridge.mirrorEvent(event, at: Date()) else { return }
        running.service.onLoop(with: mirrored) { $0.handle($1) }
    }

    /// Publishes what a pairing asks of the user (`<base>/<dev>/pairing`), in the call (the host's
    /// event sink calls this on the loop).
    func pairing(central: String, prompt: MirrorPairingPrompt) {
        running?.service.onLoop(with: MirrorEvent.pairing(central: central, prompt: prompt, at: Date())) { $0.handle($1) }
    }

    /// Replaces the mirror by one for `config` (its `mqtt` section and services) on `layout`.
    /// The old one stops first and takes the events meanwhile: durable ones wait in the outbox in
    /// the state directory, which the new one opens and delivers; what the others changed reaches
    /// the new one with the state it starts from. Should the new one not start, the old settings
    /// run again (from the state, likewise) and this throws the new one's error; should they not
    /// start either, the mirror is off (queuing durable events when it can) and this throws
    /// `MirrorRestartFailure`.
    func replace(config: GatewayConfig, mqtt newMQTT: MQTTConfig, layout: GATTLayout) async throws {
        if let running {
            await running.service.stop()
            await running.task.value
        }
        // The old outbox's compaction, if one is under way, ends before the new outbox reads the
        // journal: else it would rename the old one's journal over the new one's appends.
        await stateWriter.idle()
        // From here to the new mirror's start nothing suspends: no event falls between the two.
        var previous = config
        previous.mqtt = mqtt
        do {
            try start(config: config, mqtt: newMQTT, layout: layout, fallingBack: false)
            mqtt = newMQTT
        } catch {
            do {
                try start(config: previous, mqtt: mqtt, layout: layout, fallingBack: true)
            } catch let restart {
                let failure = MirrorRestartFailure(new: error, previous: restart)
                offReason = "\(failure)"
                reportedLostEvents = false
                connectionChanged("off until a reload starts it (\(failure))")
                await replayState()
                throw failure
            }
            await replayState()
            throw error
        }
        await replayState()
    }

    /// Makes and runs a mirror for `mqtt`. One that cannot connect (`startFailure`) is kept
    /// running, to queue durable events, only when nothing else will run (`fallingBack`) and
    /// throws; one whose outbox cannot be opened leaves none.
    private func start(config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout, fallingBack: Bool) throws {
        let service: MQTTMirrorService
        let bridge: MirrorBridge
        do {
            (service, bridge) = try Self.make(
                config: config, mqtt: mqtt, layout: layout, pipeline: pipeline, address: address,
                stateWriter: stateWriter, logger: logger, connectionChanged: connectionChanged)
        } catch {
            if fallingBack { running = nil }
            throw error
        }
        if let failure = service.startFailure {
            if fallingBack { running = Running(service: service, bridge: bridge, task: Self.run(service)) }
            throw failure
        }
        running = Running(service: service, bridge: bridge, task: Self.run(service))
        offReason = nil
    }

    /// Tells a new mirror what the old one had learnt from events: the state and counters, each
    /// characteristic's value (presses excepted) and whether it is current, the connected centrals
    /// (MTU, security) and their subscriptions.
    private func replayState() async {
        var events: [PipelineEvent] = [await pipeline.statusEvent]
        let layout = await pipeline.layout
        var refsByClientConfiguration: [UInt16: CharacteristicRef] = [:]
        for ref in layout.characteristics.keys.sorted() {
            // A press was published when it happened; published again it would be a new one.
            let isEvent: Bool
            if case .sensor(_, let reading) = layout.characteristics[ref]?.config.source {
                isEvent = reading.isEvent
            } else {
                isEvent = false
            }
            if !isEvent, let bytes = await pipeline.currentBytes(ref) { events.append(.valueChanged(ref, bytes)) }
            if let handle = await pipeline.publishedCharacteristic(ref)?.clientConfigurationHandle {
                refsByClientConfiguration[handle] = ref
            }
        }
        for (ref, reason) in await pipeline.unavailableCharacteristics {
            events.append(.availabilityChanged(ref, unavailable: reason))
        }
        for (central, security) in await host.connectedLinks {
            let id = GATTPeripheralBinding.centralID(central)
            let mtu = (await peripheral.maximumUpdateValueLength(for: id) ?? 20) + 3
            events += [.centralConnected(id, mtu: mtu), .securityChanged(id, security)]
            for (handle, bits) in (await peripheral.clientConfigurations(of: id) ?? [:]).sorted(by: { $0.key < $1.key }) {
                guard let ref = refsByClientConfiguration[handle] else { continue }
                events.append(.subscribed(ref, id, bits & 0x0001 != 0 ? .notification : .indication))
            }
        }
        for event in events { forward(event) }
    }

    /// The mirror as `gattway status` shows it.
    func status() async -> GatewayStatus.MQTT {
        let broker = "\(mqtt.broker)"
        guard let service = running?.service else {
            return GatewayStatus.MQTT(
                broker: broker, state: "off", error: offReason, behind: false, held: 0, outbox: 0, dropped: 0, refused: 0)
        }
        if service.startFailure != nil {
            return GatewayStatus.MQTT(
                broker: broker, state: "off", error: offReason, behind: false, held: 0,
                outbox: await service.undeliveredEvents, dropped: await service.droppedEvents, refused: 0)
        }
        let connected = await service.isConnected
        return GatewayStatus.MQTT(
            broker: broker, state: connected ? "connected" : "connecting",
            error: connected ? nil : await service.lastError, behind: await service.isBehind,
            held: await service.heldMessages, outbox: await service.undeliveredEvents,
            dropped: await service.droppedEvents, refused: await service.refusedEvents)
    }

    /// Says `offline` and disconnects; returns once the client has stopped.
    func stop() async {
        guard let running else { return }
        self.running = nil
        await running.service.stop()
        await running.task.value
    }
}

/// Neither the new MQTT settings nor those before them started: the mirror is off until a reload
/// starts it.
struct MirrorRestartFailure: Error, CustomStringConvertible {
    let new: any Error
    let previous: any Error

    var description: String { "the new settings did not start (\(new)), nor did those before (\(previous))" }
}
