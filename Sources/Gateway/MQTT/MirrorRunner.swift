import BluetoothGATT
import BluetoothHost
import Config
import EventLoop
import FoundationEssentials
import Logging
import MQTT

/// Runs the MQTT mirror for the gateway: pipeline events in, `/set` and source payloads out
/// through `MirrorBridge`, and the `state` topic (peripheral state, counters) refreshed with
/// every change of centrals and every statistics interval.
///
/// A reload that changes the `mqtt` section or the services replaces the mirror in place
/// (`replace`): the old one says `offline` and disconnects, the new one connects with the new
/// settings and topics and starts from the gateway's state now (values, centrals, subscriptions).
actor MirrorRunner {
    /// On the event loop with the pipeline and the mirror service: forwarding a value hops nowhere.
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    private struct Running {
        let service: MQTTMirrorService
        let bridge: MirrorBridge
        let task: Task<Void, Never>
    }

    private let pipeline: ValuePipeline
    private let peripheral: Peripheral
    private let host: PeripheralHost
    private let address: @Sendable (CentralID) -> String
    private let logger: Logger
    /// Tells systemd's status how the broker connection is (`ReadinessReporter.mqttChanged`).
    private let connectionChanged: @Sendable (String?) -> Void
    private var running: Running?
    /// Why it is off (`isOff`): the error its last start met.
    private var offReason: String?
    private var mqtt: MQTTConfig

    init(
        config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout, pipeline: ValuePipeline,
        peripheral: Peripheral, host: PeripheralHost,
        address: @escaping @Sendable (CentralID) -> String, logger: Logger,
        connectionChanged: @escaping @Sendable (String?) -> Void = { _ in }
    ) {
        self.connectionChanged = connectionChanged
        self.pipeline = pipeline
        self.peripheral = peripheral
        self.host = host
        self.address = address
        self.logger = logger
        self.mqtt = mqtt
        do {
            let (service, bridge) = try Self.make(
                config: config, mqtt: mqtt, layout: layout, pipeline: pipeline, address: address, logger: logger,
                connectionChanged: connectionChanged)
            running = Running(service: service, bridge: bridge, task: Self.run(service))
        } catch {
            // The gateway runs without it (BLE and sensors need no broker), as after a reload
            // that could not start it; the next reload tries again.
            logger.error("the MQTT mirror did not start: \(error); it is off until a reload starts it")
            offReason = "\(error)"
            connectionChanged("off until a reload starts it (\(error))")
        }
    }

    /// It could not start (or start again after a reload): a reload starts it even when the
    /// `mqtt` section did not change.
    var isOff: Bool { running == nil }

    private static func run(_ service: MQTTMirrorService) -> Task<Void, Never> {
        Task(executorPreference: EventLoop.shared) { await service.run() }
    }

    private static func make(
        config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout, pipeline: ValuePipeline,
        address: @escaping @Sendable (CentralID) -> String, logger: Logger,
        connectionChanged: @escaping @Sendable (String?) -> Void
    ) throws -> (MQTTMirrorService, MirrorBridge) {
        let bridge = MirrorBridge(layout: layout, address: address)
        let service = try MQTTMirrorService(
            client: MirrorMapping.clientConfiguration(mqtt),
            mirror: MirrorMapping.mirrorConfiguration(config, mqtt: mqtt, layout: layout),
            stateDirectory: URL(fileURLWithPath: config.stateDirectory), outboxCapacity: mqtt.outboxLimit,
            logger: logger,
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
        // An event of a characteristic a reload removed (its layout's, before the new one's) has
        // no topic; one during a `replace` finds no mirror, and the new one starts from the state.
        guard let running, running.bridge.covers(event) else { return }
        running.service.onLoop(with: running.bridge.mirrorEvent(event, at: Date())) { $0.handle($1) }
    }

    /// Publishes what a pairing asks of the user (`<base>/<dev>/pairing`).
    func pairing(central: String, prompt: MirrorPairingPrompt) async {
        await running?.service.handle(.pairing(central: central, prompt: prompt, at: Date()))
    }

    /// Replaces the mirror by one for `config` (its `mqtt` section and services) on `layout`.
    /// The old one stops first (it and the new one share the outbox in the state directory, whose
    /// queued events the new one delivers); events in between are not published, and what they
    /// changed reaches the new one with the state it starts from. Should the new one not start,
    /// the old settings run again (from the state, likewise) and this throws the new one's error;
    /// should they not start either, the mirror is off and this throws `MirrorRestartFailure`.
    func replace(config: GatewayConfig, mqtt newMQTT: MQTTConfig, layout: GATTLayout) async throws {
        await stop()
        do {
            try start(config: config, mqtt: newMQTT, layout: layout)
            mqtt = newMQTT
        } catch {
            var previous = config
            previous.mqtt = mqtt
            do {
                try start(config: previous, mqtt: mqtt, layout: layout)
            } catch let restart {
                let failure = MirrorRestartFailure(new: error, previous: restart)
                offReason = "\(failure)"
                connectionChanged("off until a reload starts it (\(failure))")
                throw failure
            }
            await replayState()
            throw error
        }
        await replayState()
    }

    private func start(config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout) throws {
        let (service, bridge) = try Self.make(
            config: config, mqtt: mqtt, layout: layout, pipeline: pipeline, address: address, logger: logger,
            connectionChanged: connectionChanged)
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
                broker: broker, state: "off", error: offReason, behind: false, held: 0, outbox: 0, dropped: 0)
        }
        let connected = await service.isConnected
        return GatewayStatus.MQTT(
            broker: broker, state: connected ? "connected" : "connecting",
            error: connected ? nil : await service.lastError, behind: await service.isBehind,
            held: await service.heldMessages, outbox: await service.undeliveredEvents,
            dropped: await service.droppedEvents)
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
