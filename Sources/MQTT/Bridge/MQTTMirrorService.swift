import EventLoop
import FoundationEssentials
import Logging
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
public actor MQTTMirrorService {
    /// On the event loop, where the client runs its connection and the pipeline its values: a
    /// value reaches the broker without a hop to another executor.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public typealias SetHandler = @Sendable (MirrorCharacteristicID, [UInt8]) async -> MirrorSetResult
    public typealias SourceHandler = @Sendable ([MirrorCharacteristicID], [UInt8]) async -> Void
    /// The broker connected (nil), or why the mirror is not connected and what it does about it
    /// (`…; retrying`).
    public typealias ConnectionHandler = @Sendable (String?) -> Void

    /// nil when the connection could not start (`startFailure`).
    private let client: MQTTClient?
    private var mirror: Mirror
    private let outbox: MQTTOutbox
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let onSet: SetHandler
    private let onSourceValue: SourceHandler
    private let onConnectionChange: ConnectionHandler
    private var connection: MQTTConnectionID?
    /// `stop()` was called: the connection's end is no news for `onConnectionChange`.
    private var isStopping = false
    /// Message id of the live connection → the outbox entry awaiting its PUBACK.
    private var inFlight: [Int32: OutboxEntry] = [:]
    private let started: Date
    private let birthDelay: @Sendable () -> Duration
    /// Fires when the mirror's next heartbeat check is due (`Mirror.nextHeartbeatCheck`); set
    /// while `run()` runs.
    private var heartbeatTimer: DeadlineTimer?
    /// The components of the published device documents.
    private let publishedComponentsFile: PublishedComponentsFile
    /// While the broker is behind (`MQTTClient.isBehind`): the newest message of each topic of
    /// state (values, `state`, discovery) waiting for it to catch up, in the order the topics
    /// began to wait, and how many messages a newer one replaced meanwhile. Durable events are
    /// never held: the outbox bounds them.
    private var held: [String: MQTTMessage] = [:]
    private var heldTopics: [String] = []
    private var superseded = 0
    /// Without a record of the discovery published: what the live connection has learnt of the
    /// broker's so far, until its marker is back or `DiscoverySurvey.timeout` has passed.
    private var survey: DiscoverySurvey?
    private var surveyTimeout: Task<Void, Never>?

    /// Why the mirror is not connected: the last attempt's failure, or how the last connection
    /// ended; nil while connected.
    public private(set) var lastError: String?
    /// Why this mirror runs without a connection: its client could not be made. nil when it has one.
    public nonisolated let startFailure: MQTTError?
    /// Durable events the broker refused (MQTT 5 reason code ≥ 0x80), each published on `error`.
    public private(set) var refusedEvents = 0
    public var isConnected: Bool { connection != nil }
    /// Events waiting in the outbox for the broker's acknowledgement.
    public var undeliveredEvents: Int { outbox.count }
    /// Events dropped because the outbox was full (oldest first), since this service started.
    public var droppedEvents: Int { outbox.droppedCount }
    /// Messages of state held back until the broker catches up: at most one per topic.
    public var heldMessages: Int { held.count }
    /// Connected, but the broker has not yet taken `MQTTClientConfiguration.maximumBacklog`
    /// messages (it has not caught up since).
    public var isBehind: Bool {
        guard let connection, let client else { return false }
        return client.isBehind(on: connection)
    }

    /// - Parameters:
    ///   - client: broker settings; the Last Will is set here to `offline` on the availability topic.
    ///   - stateDirectory: where the outbox journal lives (`outbox.jsonl`).
    ///   - stateWriter: the service's state files' writer, which writes the outbox's compactions
    ///     and fsyncs and the discovery record.
    ///   - now: the clock for `/error` timestamps, heartbeats and the uptime.
    ///   - birthDelay: how long to wait after Home Assistant's birth message before publishing
    ///     discovery again; random within 5 s by default, so gateways that all hear the same
    ///     birth message do not answer at once.
    public init(
        client configuration: MQTTClientConfiguration, mirror: MirrorConfiguration,
        stateDirectory: URL, outboxCapacity: Int = 10_000, stateWriter: StateFileWriter, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() },
        birthDelay: @escaping @Sendable () -> Duration = { .milliseconds(Int.random(in: 0...5000)) },
        onSet: @escaping SetHandler, onSourceValue: @escaping SourceHandler,
        onConnectionChange: @escaping ConnectionHandler = { _ in }
    ) throws {
        var mirror = try Mirror(configuration: mirror)
        self.outbox = try MQTTOutbox(
            directory: stateDirectory, capacity: outboxCapacity, writer: stateWriter, logger: logger)
        let publishedComponentsFile = PublishedComponentsFile(stateDirectory: stateDirectory.path, writer: stateWriter)
        var configuration = configuration
        configuration.will = mirror.lastWill
        do {
            do {
                mirror.publishedComponents = try publishedComponentsFile.load()
                mirror.publishedDiscoveryPrefix = try publishedComponentsFile.loadPrefix()
            } catch {
                throw MQTTError.invalidConfiguration("\(error)")
            }
            self.client = try MQTTClient(configuration: configuration, logger: logger)
            self.startFailure = nil
        } catch {
            self.client = nil
            self.startFailure = error as? MQTTError ?? .invalidConfiguration("\(error)")
        }
        self.mirror = mirror
        self.logger = logger
        self.now = now
        self.started = now()
        self.publishedComponentsFile = publishedComponentsFile
        self.birthDelay = birthDelay
        self.onSet = onSet
        self.onSourceValue = onSourceValue
        self.onConnectionChange = onConnectionChange
    }

    /// Connects (and keeps reconnecting) until `stop()`, publishing heartbeats as they fall due;
    /// returns after the client has stopped.
    public func run() async {
        guard let client else { return }
        client.start()
        // The timer fires on the event loop; the heartbeats are this actor's: one hop per check.
        let heartbeats = DeadlineTimer { [weak self] _ in
            guard let self else { return }
            Task { await self.publishDueHeartbeats() }
        }
        heartbeatTimer = heartbeats
        scheduleHeartbeatCheck()
        for await event in client.events {
            await process(event)
        }
        heartbeatTimer = nil
        heartbeats.cancel()
    }

    /// Publishes `offline` (a clean shutdown does not trigger the Last Will), then disconnects.
    public func stop() async {
        isStopping = true
        endSurvey()
        guard let client else { return }
        if let connection {
            _ = try? client.publish(mirror.offlineMessage, on: connection)
        }
        await client.stop()
    }

    /// A gateway event: updates the mirror and publishes what it implies.
    public func handle(_ event: MirrorEvent) {
        var event = event
        if case .peripheralState(var state) = event {
            state.uptime = Int(now().timeIntervalSince(started))
            state.outbox = outbox.count
            state.refused = refusedEvents
            event = .peripheralState(state)
        }
        for action in mirror.apply(event) {
            perform(action)
        }
    }

    /// Publishes the heartbeats due now and schedules the next check; nothing once `run()` has
    /// returned.
    private func publishDueHeartbeats() {
        guard heartbeatTimer != nil else { return }
        for action in mirror.heartbeats(at: now()) {
            perform(action)
        }
        scheduleHeartbeatCheck()
    }

    /// Arms the heartbeat timer for the mirror's next check; never when no characteristic has a
    /// heartbeat.
    private func scheduleHeartbeatCheck() {
        guard let check = mirror.nextHeartbeatCheck(after: now()) else { return }
        heartbeatTimer?.schedule(after: .seconds(max(0, check.timeIntervalSince(now()))))
    }

    // MARK: Client events

    private func process(_ event: MQTTClientEvent) async {
        switch event {
        case .connected(let id):
            connection = id
            lastError = nil
            onConnectionChange(nil)
            inFlight = [:]
            dropHeld()
            logger.info("MQTT connected to \(brokerAddress) (\(id))")
            for topic in mirror.inboundSubscriptions { subscribe(topic) }
            if let survey = mirror.discoverySurvey { begin(survey, on: id) }
            // Queued events first, then the current retained state, so the retained topics end
            // on their latest values even when the outbox held older ones.
            if outbox.count > 0 { logger.info("MQTT delivering \(outbox.count) queued event(s)") }
            for entry in outbox.pending { send(entry) }
            for message in mirror.retainedSnapshot { publish(message) }
            if survey == nil { rememberPublishedComponents() }

        case .disconnected(let id, let reason):
            if connection == id {
                connection = nil
                lastError = reason
                if !isStopping { onConnectionChange("\(reason); reconnecting") }
                inFlight = [:]
                dropHeld()
                endSurvey()
            }

        case .connectionFailed(let error, _):
            lastError = "\(error)"
            onConnectionChange("\(error); retrying")

        case .delivered(let id, let messageID, let reasonCode):
            guard id == connection, let entry = inFlight.removeValue(forKey: messageID) else { return }
            if reasonCode >= 0x80 { refused(entry, reasonCode: reasonCode) }
            do { try outbox.acknowledge(entry.sequence) } catch { logger.error("\(error)") }

        case .caughtUp(let id):
            if id == connection { publishHeld(on: id) }

        case .message(let message):
            if survey?.take(message) == true {
                if survey?.isComplete == true { finishDiscovery() }
                return
            }
            await route(message)
        }
    }

    // MARK: Discovery without a record

    /// Learns what the broker holds of the discovery before publishing it (`DiscoverySurvey`).
    private func begin(_ survey: DiscoverySurvey, on connection: MQTTConnectionID) {
        self.survey = survey
        for topic in survey.subscriptions { subscribe(topic) }
        publish(survey.marker)
        surveyTimeout = Task {
            guard (try? await Task.sleep(for: DiscoverySurvey.timeout)) != nil, self.connection == connection,
                self.survey != nil
            else { return }
            self.logger.warning(
                "MQTT: \(self.mirror.topics.discoverySurvey) did not come back within \(DiscoverySurvey.timeout); publishing Home Assistant discovery after what the broker sent meanwhile"
            )
            self.finishDiscovery()
        }
    }

    /// Publishes the discovery after what the survey found, and records it.
    private func finishDiscovery() {
        guard let survey else { return }
        endSurvey()
        for topic in survey.subscriptions { unsubscribe(topic) }
        logger.info(
            "no record of the Home Assistant discovery published (a first start, or a wiped state directory): the broker held \(survey.components.count) component(s) of its device document and \(survey.perEntityTopics.count) per-entity document(s)"
        )
        for message in mirror.finishDiscovery(survey) { publish(message) }
        rememberPublishedComponents()
    }

    private func endSurvey() {
        survey = nil
        surveyTimeout?.cancel()
        surveyTimeout = nil
    }

    private func route(_ message: MQTTMessage) async {
        switch mirror.route(message) {
        case .set(let id, let payload):
            if case .rejected(let reason) = await onSet(id, payload) {
                logger.warning("MQTT /set for \(id) rejected: \(reason)")
                publish(mirror.rejection(of: id, reason: reason, at: now()))
            }
        case .sourceValue(let ids, let payload):
            await onSourceValue(ids, payload)
        case .homeAssistantOnline:
            let delay = birthDelay()
            logger.info("Home Assistant came online: re-publishing discovery in \(delay)")
            Task {
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                // The task runs on this actor: the call needs no hop.
                self.publishDiscovery()
            }
        case .stalePerEntityDiscovery(let topic):
            logger.info("clearing the per-entity Home Assistant discovery left on \(topic)")
            publish(MQTTMessage(topic: topic, payload: [], retain: true))
        case .staleRetained(let correction):
            logger.info("correcting \(correction.topic), left retained by an earlier run")
            publish(correction)
        case .ignored:
            break
        }
    }

    /// A refused event is not retried (the broker would refuse it again, and hold up the
    /// outbox), nor dropped unseen: it is logged, published whole on `error`, and counted in the
    /// `state` topic and `gattway status`.
    private func refused(_ entry: OutboxEntry, reasonCode: Int32) {
        let reason = "the broker refused it: \(MQTTClient.reasonString(reasonCode)) (reason code 0x\(String(reasonCode, radix: 16)))"
        refusedEvents += 1
        logger.error("MQTT event #\(entry.sequence) on \(entry.message.topic): \(reason); published on \(mirror.topics.error) instead")
        publish(mirror.refusal(of: entry.message, reason: reason, at: now()))
        handle(.peripheralState(mirror.peripheralState))
    }

    private var brokerAddress: String {
        guard let client else { return "(no connection)" }
        return "\(client.configuration.host):\(client.configuration.port)"
    }

    /// The device document again; not while a survey is under way, which publishes it when done.
    private func publishDiscovery() {
        guard survey == nil else { return }
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
                send(try outbox.append(message))
                outbox.sync()
            } catch {
                // Still sent to a connected broker: only a broker out of reach now loses it.
                let fate = connection == nil ? "lost (no broker connected)" : "sent without the outbox"
                logger.error("MQTT event on \(message.topic) could not be queued: \(error); \(fate)")
                publish(message)
            }
        case .publish(let message, durable: false):
            publish(message)
        case .subscribe(let topic):
            subscribe(topic)
        case .unsubscribe(let topic):
            unsubscribe(topic)
        }
    }

    private func send(_ entry: OutboxEntry) {
        guard let connection, let client else { return }
        report { inFlight[try client.publish(entry.message, on: connection, reportsDelivery: true)] = entry }
    }

    /// Non-durable messages are only sent while connected: what matters of them is re-published
    /// from the retained snapshot on the next connection. While the broker is behind, each waits
    /// as the newest of its topic, so a broker that is connected but slow holds gattway's memory
    /// to one message per topic, and gets the newest state first when it catches up.
    private func publish(_ message: MQTTMessage) {
        guard let connection, let client else { return }
        guard held.isEmpty, !client.isBehind(on: connection) else {
            hold(message)
            return
        }
        report { try client.publish(message, on: connection) }
    }

    private func hold(_ message: MQTTMessage) {
        if held.isEmpty, let client {
            logger.warning(
                "MQTT broker is behind (\(client.configuration.maximumBacklog) messages not taken yet): holding the newest value of each topic until it catches up"
            )
        }
        if held.updateValue(message, forKey: message.topic) == nil {
            heldTopics.append(message.topic)
        } else {
            superseded += 1
        }
    }

    /// Publishes the held messages, oldest topic first, until the broker is behind again.
    private func publishHeld(on connection: MQTTConnectionID) {
        guard let client else { return }
        var sent = 0
        while sent < heldTopics.count, !client.isBehind(on: connection) {
            let topic = heldTopics[sent]
            sent += 1
            if let message = held.removeValue(forKey: topic) { report { try client.publish(message, on: connection) } }
        }
        heldTopics.removeFirst(sent)
        guard held.isEmpty else { return }
        logger.info(
            "MQTT broker caught up: the newest value of each topic published, \(superseded) older one(s) replaced while it was behind"
        )
        superseded = 0
    }

    /// A new connection starts from the retained snapshot, which has the newest of everything.
    private func dropHeld() {
        held.removeAll()
        heldTopics.removeAll()
        superseded = 0
    }

    private func subscribe(_ topic: String) {
        guard let connection, let client else { return }
        report { try client.subscribe(topic, on: connection) }
    }

    private func unsubscribe(_ topic: String) {
        guard let connection, let client else { return }
        report { try client.unsubscribe(topic, on: connection) }
    }

    /// A connection that just died is reported by the client's own events; other failures are logged.
    private func report(_ body: () throws -> Void) {
        do { try body() } catch MQTTError.notConnected {
        } catch { logger.error("\(error)") }
    }
}
