import EventLoop
import FoundationEssentials
import Logging
import LoopClock
import MQTTClient
import MQTTMirror
import StateFile

/// Runs the MQTT mirror: owns the client, the topic model and the persistent outbox.
///
/// The gateway feeds it `MirrorEvent`s through `handle(_:)` and supplies two callbacks: `onSet`
/// validates and applies a `/set` payload (a rejection is published on `<base>/<dev>/error` and
/// nothing changes), `onSourceValue` receives payloads from source topics. Durable events (writes,
/// subscriber lists, centrals) pass through the outbox and leave it only when the broker has
/// acknowledged them; retained state is re-published on every connection.
///
/// A mirror whose connection cannot start (its password file or discovery record unreadable,
/// its client settings refused) still runs without one (`startFailure` says why): durable events
/// go to the outbox all the same, for the next mirror on the same state directory to deliver.
/// Only an outbox that cannot be opened keeps the service from being made at all.
///
/// The actor wires small stages, each with its own tests: `BrokerConnection` (the client and the
/// live connection), `OutboxDelivery` (which outbox entry each acknowledgement takes off),
/// `BacklogHold` (state held while the broker is behind), `HeartbeatSchedule`, `PendingDiscovery`
/// (discovery without a record) and `InboundRouting` (`/set`, source topics, Home Assistant's
/// birth).
public actor MQTTMirrorService {
    /// On the event loop, where the client runs its connection and the pipeline its values: a
    /// value reaches the broker without a hop to another executor.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public typealias SetHandler = @Sendable (MirrorCharacteristicID, [UInt8]) async -> MirrorSetResult
    public typealias SourceHandler = @Sendable ([MirrorCharacteristicID], [UInt8]) async -> Void
    /// The broker connected (nil), or why the mirror is not connected and what it does about it
    /// (`…; retrying`).
    public typealias ConnectionHandler = @Sendable (String?) -> Void

    private let connection: BrokerConnection
    private var mirror: Mirror
    private var delivery: OutboxDelivery
    private var hold = BacklogHold()
    private var heartbeats = HeartbeatSchedule()
    private var pendingDiscovery = PendingDiscovery()
    /// The actions of one event, kept between events so a value allocates no array for them.
    private var eventActions: [MirrorAction] = []
    private let routing: InboundRouting
    private let logger: Logger
    /// The wall clock, for timestamps people read (`/error`).
    private let now: @Sendable () -> Date
    /// The loop's clock, for heartbeats and the uptime: the wall clock may jump.
    private let clock: @Sendable () -> LoopInstant
    private let started: LoopInstant
    /// The components of the published device documents.
    private let publishedComponentsFile: PublishedComponentsFile
    /// `run()` waiting for `stop()` to have stopped the client.
    private var runEnd: CheckedContinuation<Void, Never>?
    /// The gateway's handling of `/set` and source payloads (`route`), one after the other.
    private var gatewayAnswers = SerialTasks()

    /// Why the mirror is not connected: the last attempt's failure, or how the last connection
    /// ended; nil while connected.
    public var lastError: String? { connection.lastError }
    /// Why this mirror runs without a connection: its client could not be made. nil when it has one.
    public nonisolated let startFailure: MQTTError?
    /// Durable events the broker refused (MQTT 5 reason code ≥ 0x80), each published on `error`.
    public var refusedEvents: Int { delivery.refused }
    public var isConnected: Bool { connection.live != nil }
    /// Events waiting in the outbox for the broker's acknowledgement.
    public var undeliveredEvents: Int { delivery.outbox.count }
    /// Events dropped because the outbox was full (oldest first), since this service started.
    public var droppedEvents: Int { delivery.outbox.droppedCount }
    /// Messages of state held back until the broker catches up: at most one per topic.
    public var heldMessages: Int { hold.count }
    /// Connected, but the broker has not yet taken `MQTTClientConfiguration.maximumBacklog`
    /// messages (it has not caught up since).
    public var isBehind: Bool { connection.isBehind }

    /// - Parameters:
    ///   - client: broker settings; the Last Will is set here to `offline` on the availability topic.
    ///   - stateDirectory: where the outbox journal lives (`outbox.jsonl`).
    ///   - stateWriter: the service's state files' writer, which writes the outbox's compactions
    ///     and fsyncs and the discovery record.
    ///   - now: the wall clock, for `/error` timestamps.
    ///   - clock: the loop's clock, for heartbeats and the uptime.
    ///   - birthDelay: how long to wait after Home Assistant's birth message before publishing
    ///     discovery again; random within 5 s by default, so gateways that all hear the same
    ///     birth message do not answer at once.
    public init(
        client configuration: MQTTClientConfiguration, mirror: MirrorConfiguration,
        stateDirectory: URL, outboxCapacity: Int = 10_000, stateWriter: StateFileWriter, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() },
        clock: @escaping @Sendable () -> LoopInstant = { EventLoop.now() },
        birthDelay: @escaping @Sendable () -> Duration = { .milliseconds(Int.random(in: 0...5000)) },
        onSet: @escaping SetHandler, onSourceValue: @escaping SourceHandler,
        onConnectionChange: @escaping ConnectionHandler = { _ in }
    ) throws {
        var mirror = try Mirror(configuration: mirror)
        let outbox = try MQTTOutbox(
            directory: stateDirectory, capacity: outboxCapacity, writer: stateWriter, logger: logger)
        let publishedComponentsFile = PublishedComponentsFile(stateDirectory: stateDirectory.path, writer: stateWriter)
        var configuration = configuration
        configuration.will = mirror.lastWill
        var client: MQTTClient?
        do {
            do {
                mirror.publishedComponents = try publishedComponentsFile.load()
                mirror.publishedDiscoveryPrefix = try publishedComponentsFile.loadPrefix()
            } catch {
                throw MQTTError.invalidConfiguration("\(error)")
            }
            client = try MQTTClient(configuration: configuration, logger: logger)
            self.startFailure = nil
        } catch {
            self.startFailure = error as? MQTTError ?? .invalidConfiguration("\(error)")
        }
        self.connection = BrokerConnection(client: client, logger: logger, onChange: onConnectionChange)
        self.delivery = OutboxDelivery(outbox: outbox)
        self.routing = InboundRouting(onSet: onSet, onSourceValue: onSourceValue, birthDelay: birthDelay, logger: logger)
        self.mirror = mirror
        self.logger = logger
        self.now = now
        self.clock = clock
        self.started = clock()
        self.publishedComponentsFile = publishedComponentsFile
    }

    /// Connects (and keeps reconnecting) until `stop()`, publishing heartbeats as they fall due;
    /// returns after the client has stopped.
    public func run() async {
        guard let client = connection.client, !connection.isStopping else { return }
        // Each event in the client's call on the loop, this actor's executor: no task per event.
        // The client and the timer reach the service strongly, a cycle until `stop()` ends the
        // client's events and the timer stops below: a weak reference would give the service a
        // side table, and every retain and release of it would take the runtime's slow path
        // (docs/performance.md).
        client.start { [self] event in onLoop(with: event) { $0.process($1) } }
        // The timer fires on the event loop, this actor's executor: each check in its call.
        heartbeats.start { [self] in onLoop { $0.publishDueHeartbeats() } }
        heartbeats.schedule(mirror.nextHeartbeatCheck(after: clock()))
        await withCheckedContinuation { runEnd = $0 }
        heartbeats.stop()
        await gatewayAnswers.idle()
    }

    /// Publishes `offline` (a clean shutdown does not trigger the Last Will), then disconnects.
    public func stop() async {
        connection.stopping()
        _ = pendingDiscovery.end()
        guard let client = connection.client else { return }
        connection.publish(mirror.offlineMessage)
        await client.stop()
        runEnd?.resume()
        runEnd = nil
    }

    /// A gateway event: updates the mirror and publishes what it implies.
    public func handle(_ event: MirrorEvent) {
        // The event is passed on as it came, not copied into a variable first: a value's event
        // is the common one, and only the state's is completed here.
        guard case .peripheralState(var state) = event else { return apply(event) }
        state.uptime = Int((clock() - started).components.seconds)
        state.outbox = delivery.outbox.count
        state.refused = delivery.refused
        apply(.peripheralState(state))
    }

    private func apply(_ event: MirrorEvent) {
        // Swapped out while in use (a swap neither retains nor releases), so appending reuses
        // its storage; an event performed meanwhile that applies another gets an array of its own.
        // Each action is moved out of it in turn (reversed, then taken from the end), not copied
        // out and released again with the array's.
        var actions: [MirrorAction] = []
        swap(&actions, &eventActions)
        mirror.apply(event, now: clock(), into: &actions)
        actions.reverseForPoppingInOrder()
        while let action = actions.popLast() { perform(action) }
        swap(&actions, &eventActions)
    }

    /// Publishes the heartbeats due now and schedules the next check; nothing once `run()` has
    /// returned.
    private func publishDueHeartbeats() {
        guard heartbeats.isRunning else { return }
        let now = clock()
        for action in mirror.heartbeats(at: now) {
            perform(action)
        }
        heartbeats.schedule(mirror.nextHeartbeatCheck(after: now))
    }

    // MARK: Client events

    private func process(_ event: MQTTClientEvent) {
        switch event {
        case .connected(let id):
            connection.connected(id)
            delivery.connectionChanged()
            hold.drop()
            for topic in mirror.inboundSubscriptions { connection.subscribe(topic) }
            if let survey = mirror.discoverySurvey { begin(survey, on: id) }
            // Queued events first, then the current retained state, so the retained topics end
            // on their latest values even when the outbox held older ones.
            let queued = delivery.outbox.count
            if queued > 0 { logger.info("MQTT delivering \(queued) queued event(s)") }
            for entry in delivery.outbox.pending { send(entry) }
            for message in mirror.retainedSnapshot { publish(message) }
            if !pendingDiscovery.isUnderWay { rememberPublishedComponents() }

        case .disconnected(let id, let reason):
            if connection.disconnected(id, reason: reason) {
                delivery.connectionChanged()
                hold.drop()
                _ = pendingDiscovery.end()
            }

        case .connectionFailed(let error, _):
            connection.failed(error)

        case .delivered(let id, let messageID, let reasonCode):
            guard id == connection.live else { return }
            do {
                if let refused = try delivery.delivered(messageID, reasonCode: reasonCode) {
                    reportRefusal(refused, reasonCode: reasonCode)
                }
            } catch { logger.error("\(error)") }

        case .caughtUp(let id):
            if id == connection.live { publishHeld() }

        case .message(let message):
            switch pendingDiscovery.take(message) {
            case .complete: finishDiscovery()
            case .taken: break
            case .notTheSurveys: route(message)
            }
        }
    }

    // MARK: Discovery without a record

    /// Learns what the broker holds of the discovery before publishing it (`DiscoverySurvey`).
    private func begin(_ survey: DiscoverySurvey, on id: MQTTConnectionID) {
        let timeout = Task {
            guard (try? await Task.sleep(for: DiscoverySurvey.timeout)) != nil, self.connection.live == id,
                self.pendingDiscovery.isUnderWay
            else { return }
            self.logger.warning(
                "MQTT: \(self.mirror.topics.discoverySurvey) did not come back within \(DiscoverySurvey.timeout); publishing Home Assistant discovery after what the broker sent meanwhile"
            )
            self.finishDiscovery()
        }
        pendingDiscovery.begin(survey, timeout: timeout)
        for topic in survey.subscriptions { connection.subscribe(topic) }
        publish(survey.marker)
    }

    /// Publishes the discovery after what the survey found, and records it.
    private func finishDiscovery() {
        guard let survey = pendingDiscovery.end() else { return }
        for topic in survey.subscriptions { connection.unsubscribe(topic) }
        logger.info(
            "no record of the Home Assistant discovery published (a first start, or a wiped state directory): the broker held \(survey.components.count) component(s) of its device document and \(survey.perEntityTopics.count) per-entity document(s)"
        )
        for message in mirror.finishDiscovery(survey) { publish(message) }
        rememberPublishedComponents()
    }

    private func route(_ message: MQTTMessage) {
        let inbound = mirror.route(message)
        guard let reply = routing.route(inbound) else {
            // A `/set` or source payload: the gateway's handlers are async (an output's line is
            // driven off the loop), so these alone take a task, each after the one before, so the
            // payloads apply in the order they came.
            gatewayAnswers.enqueue { await self.askGateway(inbound) }
            return
        }
        act(on: reply)
    }

    private func askGateway(_ inbound: MirrorInbound) async {
        act(on: await routing.ask(inbound))
    }

    private func act(on reply: InboundRouting.Reply) {
        switch reply {
        case .nothing:
            break
        case .reject(let id, let reason):
            publish(mirror.rejection(of: id, reason: reason, at: now()))
        case .publish(let message):
            publish(message)
        case .republishDiscovery(let delay):
            Task {
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                // The task runs on this actor: the call needs no hop.
                self.publishDiscovery()
            }
        }
    }

    /// A refused event is not retried (the broker would refuse it again, and hold up the
    /// outbox), nor dropped unseen: it is logged, published whole on `error`, and counted in the
    /// `state` topic and `gattway status`.
    private func reportRefusal(_ entry: OutboxEntry, reasonCode: Int32) {
        let reason = "the broker refused it: \(MQTTClient.reasonString(reasonCode)) (reason code 0x\(String(reasonCode, radix: 16)))"
        logger.error("MQTT event #\(entry.sequence) on \(entry.message.topic): \(reason); published on \(mirror.topics.error) instead")
        publish(mirror.refusal(of: entry.message, reason: reason, at: now()))
        handle(.peripheralState(mirror.peripheralState))
    }

    /// The device document again; not while a survey is under way, which publishes it when done.
    private func publishDiscovery() {
        guard !pendingDiscovery.isUnderWay else { return }
        for message in mirror.discoveryMessages { publish(message) }
    }

    /// Records the components this connection's discovery published (after a migration, the
    /// first record). Should writing fail, the next connection publishes the same again, which
    /// Home Assistant takes as it is.
    private func rememberPublishedComponents() {
        let components = mirror.componentsToRemember
        let prefix = mirror.configuration.discoveryPrefix
        // With discovery off, only the record of a document just cleared changes.
        guard prefix != nil || mirror.publishedDiscoveryPrefix != nil,
            components != mirror.publishedComponents || prefix != mirror.publishedDiscoveryPrefix
        else { return }
        publishedComponentsFile.save(components, prefix: prefix) { [self] error in
            EventLoop.shared.execute {
                self.onLoop { $0.recorded(components, prefix: prefix, failure: error) }
            }
        }
    }

    /// The end of `rememberPublishedComponents`'s write, on the loop.
    private func recorded(_ components: Set<HomeAssistantComponent>, prefix: String?, failure: StateFileError?) {
        if let failure {
            logger.error("could not record the Home Assistant discovery published: \(failure)")
            return
        }
        mirror.publishedComponents = components
        mirror.publishedDiscoveryPrefix = prefix
    }

    // MARK: Sending

    private func perform(_ action: MirrorAction) {
        switch action {
        case .publish(let message, durable: true):
            do {
                send(try delivery.outbox.append(message))
                delivery.outbox.sync()
            } catch {
                // Still sent to a connected broker: only a broker out of reach now loses it.
                let fate = connection.live == nil ? "lost (no broker connected)" : "sent without the outbox"
                logger.error("MQTT event on \(message.topic) could not be queued: \(error); \(fate)")
                publish(message)
            }
        case .publish(let message, durable: false):
            publish(message)
        case .subscribe(let topic):
            connection.subscribe(topic)
        case .unsubscribe(let topic):
            connection.unsubscribe(topic)
        }
    }

    private func send(_ entry: OutboxEntry) {
        if let messageID = connection.publishReportingDelivery(entry.message) { delivery.sent(entry, as: messageID) }
    }

    /// Non-durable messages are only sent while connected: what matters of them is re-published
    /// from the retained snapshot on the next connection. While the broker is behind, each waits
    /// in the hold as the newest of its topic (`BacklogHold`).
    private func publish(_ message: MQTTMessage) {
        guard connection.live != nil else { return }
        guard hold.isEmpty, !connection.isBehind else {
            if hold.hold(message), let client = connection.client {
                logger.warning(
                    "MQTT broker is behind (\(client.configuration.maximumBacklog) messages not taken yet): holding the newest value of each topic until it catches up"
                )
            }
            return
        }
        connection.publish(message)
    }

    /// Publishes the held messages, oldest topic first, until the broker is behind again.
    private func publishHeld() {
        guard
            let superseded = hold.release(while: { !connection.isBehind }, to: { connection.publish($0) })
        else { return }
        logger.info(
            "MQTT broker caught up: the newest value of each topic published, \(superseded) older one(s) replaced while it was behind"
        )
    }
}
