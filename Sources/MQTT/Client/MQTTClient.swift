import CMosquitto
import Dispatch
import EventLoop
import FoundationEssentials
import Glibc
import Logging
import LoopClock
import MQTTMirror
import Synchronization

/// Identifies one broker connection (one CONNECT/CONNACK). Message ids are only meaningful
/// within the connection that issued them.
public struct MQTTConnectionID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public var description: String { "#\(rawValue)" }
}

public enum MQTTClientEvent: Sendable, Equatable {
    /// CONNACK accepted; retained state and subscriptions must be (re)established now, because
    /// every connection starts a clean session.
    case connected(MQTTConnectionID)
    /// An established connection ended (broker gone, network lost, or `stop()`).
    case disconnected(MQTTConnectionID, reason: String)
    /// A connection attempt failed; the client retries after `retryIn`.
    case connectionFailed(MQTTError, retryIn: Duration)
    /// The broker acknowledged QoS 1/2 message `messageID` (PUBACK/PUBCOMP), or QoS 0 message
    /// `messageID` was sent; only for messages published with `reportsDelivery`. `reasonCode`
    /// ≥ 0x80 means the broker refused it (MQTT 5 only).
    case delivered(MQTTConnectionID, messageID: Int32, reasonCode: Int32)
    /// The connection's backlog, which had reached `maximumBacklog`, is down to half of it: the
    /// broker is taking messages again (see `isBehind(on:)`).
    case caughtUp(MQTTConnectionID)
    case message(MQTTMessage)
}

/// Where a client's events go (`MQTTClient.start(eventSink:)`): called on the event loop, in the
/// order the events happened, in the loop's turn that produced each (the read that brought a
/// PUBACK or a message) or, for those of the client's own thread (a failed attempt, a connection's
/// end), in the turn that thread handed it to. Never inside a call into the client (`publish`
/// returns before its `.delivered` comes), so the sink may publish. It must not block.
public typealias MQTTClientEventSink = @Sendable (MQTTClientEvent) -> Void

/// The one place gattway touches libmosquitto. Nothing above it sees a C pointer.
///
/// Concurrency design: a connection is made on a thread of the client's own, where blocking is
/// harmless (name resolution, the TCP connect, the TLS handshake), and run on gattway's event loop
/// once made: the loop watches the socket and calls `mosquitto_loop_read` when it is readable,
/// `mosquitto_loop_write` when libmosquitto has bytes left to send (asking for writability while
/// the socket is full), and `mosquitto_loop_misc` once a second for the keepalive. So a value
/// published from the loop (the mirror runs there) is written to the socket in the same call, and
/// its PUBACK is read in the loop's next wake-up: no thread is woken per message. libmosquitto's
/// callbacks run on the loop, and the `MQTTClientEvent`s they make reach the caller's sink there,
/// once libmosquitto has returned (no task, stream or hop per event); the two events the client's
/// thread makes (`.connectionFailed`, `.disconnected`) are handed to the loop first, after
/// whatever the loop was given before, so the sink sees every event in order on one thread.
/// `publish`, `subscribe` and `unsubscribe` run on the loop too (at once when called there, else
/// queued and waited for), so one thread at a time touches a `mosquitto` instance: the client's
/// thread until the connection is made and after it ended, the loop in between. The client's thread
/// also waits out the back-off between attempts: one reconnect policy (exponential back-off) for
/// every failure, and a precise error for each, where libmosquitto's own loop thread would give up
/// for good on TLS or authorization errors. Each connection attempt uses a fresh `mosquitto` instance: its
/// session state (in-flight messages, subscriptions) dies with the connection, so the caller's
/// persistent outbox is the only source of redelivery and nothing is sent twice by two layers.
///
/// `stop()` is bounded whatever the broker does: it waits for the loop's connection to end (its
/// DISCONNECT sent, or `disconnectBound` passed), never for the client's thread, which may sit in
/// a blocking call that nothing can interrupt (name resolution, a SYN to a host that drops it:
/// minutes). That thread is detached and holds its own reference to the client, so it can finish
/// that call after `stop()` returned; it then finds the stop, closes what it made (a DISCONNECT
/// first, so no Last Will is published for it) and ends without handing anything to the loop.
public final class MQTTClient: @unchecked Sendable {
    // @unchecked: `lock` guards `connection` and the start/stop state; `context`, `link` and
    // `linkOutcome` belong to the client's thread while it connects and to the event loop while
    // connected, handed over in `execute` and back through `linkEnded`; the events' outlet
    // belongs to the loop.
    public let configuration: MQTTClientConfiguration

    private let logger: Logger
    private let password: String?
    private let context: CallbackContext
    private let lock = Mutex(())
    private let wakeUp = DispatchSemaphore(value: 0)
    private let loop = EventLoop.shared
    /// The connection the loop runs.
    private var link: LoopLink?
    /// Signalled by the loop when the connection it ran has ended, with `linkOutcome` set.
    private let linkEnded = DispatchSemaphore(value: 0)
    private var linkOutcome = LinkOutcome(code: 0, errno: 0)
    private var connection: MQTTConnectionID?
    private var started = false
    private var stopRequested = false
    /// `stop()` calls waiting for the loop's connection to end; touched on the loop only.
    private var linkEndWaiters: [CheckedContinuation<Void, Never>] = []

    /// How long `stop()` lets a connection's DISCONNECT take to go out before closing it anyway.
    public static let disconnectBound: Duration = .seconds(1)

    /// Resolves the password (file or environment) and validates the configuration; does not
    /// connect yet.
    public init(configuration: MQTTClientConfiguration, logger: Logger) throws {
        _ = mosquittoLibraryInitialized
        if let tls = configuration.tls, tls.caFile == nil, tls.certificateFile != nil {
            throw MQTTError.invalidConfiguration("a client certificate (mqtt.tls cert, key) needs mqtt.tls ca as well")
        }
        if let tls = configuration.tls, (tls.certificateFile == nil) != (tls.keyFile == nil) {
            throw MQTTError.invalidConfiguration("mqtt.tls cert and key must be given together")
        }
        if configuration.clientID.isEmpty || configuration.clientID.utf8.count > 65535 {
            throw MQTTError.invalidConfiguration("client id must be 1...65535 bytes")
        }
        self.configuration = configuration
        self.logger = logger
        self.password = try configuration.credentials?.password?.resolve()
        self.context = CallbackContext(maximumBacklog: configuration.maximumBacklog)
    }

    /// An MQTT 5 reason code as the specification names it ("Not authorized").
    public static func reasonString(_ code: Int32) -> String { String(cString: mosquitto_reason_string(code)) }

    /// The network thread's name, as `top -H`, `ps -L` and a crash's backtrace show it.
    public static let threadName = "gattway-mqtt"

    /// Starts the network thread; it connects, and reconnects with back-off until `stop()`. Every
    /// event goes to `eventSink`, on the event loop (see `MQTTClientEventSink`), until `stop()`.
    public func start(eventSink: @escaping MQTTClientEventSink) {
        lock.withLock { _ in
            precondition(!started, "MQTTClient.start() called twice")
            started = true
        }
        // Before the thread exists: the loop touches the outlet only for what that thread starts
        // (a connection, an event handed over), after this.
        context.outlet.sink = eventSink
        if configuration.tls?.verifyPeer == false {
            logger.warning("MQTT TLS peer verification is OFF: the broker's identity is not checked")
        }
        // A thread of its own: libmosquitto's loop blocks in poll(2) and calls back on it.
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                let client = Unmanaged<MQTTClient>.fromOpaque(context!).takeRetainedValue()
                nameThisThread(MQTTClient.threadName)
                client.runLoop()
                return nil
            }, Unmanaged.passRetained(self).toOpaque())
        precondition(created == 0, "the MQTT network thread cannot start")
        pthread_detach(thread)
    }

    /// Disconnects cleanly (no Last Will) and ends the events: none reaches the sink once this has
    /// returned. Returns once the loop's connection has ended, within `disconnectBound`, without
    /// waiting for the client's thread (see the type).
    public func stop() async {
        lock.withLock { _ in stopRequested = true }
        // A back-off wait ends at once; a blocking connect ends when it ends, and gives up then.
        wakeUp.signal()
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            loop.execute { [self] in
                guard link != nil else {
                    context.outlet.end()
                    return waiter.resume()
                }
                linkEndWaiters.append(waiter)
                disconnectLink()
            }
        }
    }

    /// Hands a message to the current connection and returns its message id. With
    /// `reportsDelivery`, a `.delivered` event with that id follows once the broker has
    /// acknowledged it (at QoS 0, once it is sent); without, none does, so a message nobody waits
    /// for (a value, state) costs no event. Throws `.notConnected` when `connection` is not the
    /// live connection, so a message is never silently queued inside libmosquitto.
    @discardableResult
    public func publish(
        _ message: MQTTMessage, on connection: MQTTConnectionID, reportsDelivery: Bool = false
    ) throws -> Int32 {
        try withLiveHandle(connection) { handle in
            var messageID: Int32 = 0
            // `withCString`, not the topic passed as a pointer: that conversion copies the text
            // into a new array on every call, while a native string already ends in a NUL.
            let rc = message.topic.withCString { topic in
                message.payload.withUnsafeBytes { bytes in
                    mosquitto_publish(
                        handle, &messageID, topic, Int32(bytes.count),
                        bytes.baseAddress, message.qos.rawValue, message.retain)
                }
            }
            try check(rc, "publish to \(message.topic)")
            context.published()
            // Its acknowledgement is read on the loop, after this returns. A QoS 0 message has
            // none: handed to libmosquitto, it is as delivered as it will be.
            if reportsDelivery {
                if message.qos == .atMostOnce {
                    context.outlet.report(.delivered(context.connection, messageID: messageID, reasonCode: 0))
                } else {
                    context.reportedDeliveries.insert(messageID)
                }
            }
            return messageID
        }
    }

    /// Whether `connection` has `maximumBacklog` messages that the broker has not taken yet
    /// (not sent at QoS 0, not acknowledged at QoS 1 and 2): a broker that is connected but
    /// slow, or a link that stalls. libmosquitto queues whatever it is handed, without a bound;
    /// a caller holds back what can wait (the newest state of each topic) until `.caughtUp`.
    public func isBehind(on connection: MQTTConnectionID) -> Bool {
        loop.runAndWait { context.isBehind && context.connection == connection }
    }

    public func subscribe(
        _ topic: String, qos: MQTTQoS = .atLeastOnce,
        on connection: MQTTConnectionID
    ) throws {
        try withLiveHandle(connection) { handle in
            try check(mosquitto_subscribe(handle, nil, topic, qos.rawValue), "subscribe to \(topic)")
        }
    }

    public func unsubscribe(_ topic: String, on connection: MQTTConnectionID) throws {
        try withLiveHandle(connection) { handle in
            try check(mosquitto_unsubscribe(handle, nil, topic), "unsubscribe from \(topic)")
        }
    }

    /// Runs `body` on the loop with the live connection's instance, then sends what it queued.
    /// An event it made (a QoS 0 message's `.delivered`, a `.caughtUp` as it went out) reaches the
    /// sink after the caller's call, not inside it.
    private func withLiveHandle<T>(_ id: MQTTConnectionID, _ body: (OpaquePointer) throws -> T) throws -> T {
        try onLoop {
            let live = lock.withLock { _ in connection == id && !stopRequested }
            guard live, let link else { throw MQTTError.notConnected }
            defer {
                flushLink()
                if context.outlet.needsDelivery() { loop.execute { [self] in context.outlet.deliver() } }
            }
            return try body(link.mosq)
        }
    }

    /// An event of the client's thread, to the sink on the loop after what the loop was given
    /// before (a connection's `.disconnected` before the next one's `.connected`).
    private func reportFromThread(_ event: MQTTClientEvent) {
        loop.execute { [self] in
            context.outlet.report(event)
            context.outlet.deliver()
        }
    }

    /// `body` on the event loop: at once when called there (the mirror is), else queued there and
    /// waited for (a caller on another thread: tests, the demo's traffic view).
    private func onLoop<T>(_ body: () throws -> T) throws -> T {
        try loop.runAndWait(body)
    }

    /// `what` is only made when the call failed: a publish checks every value.
    private func check(_ rc: Int32, _ what: @autoclosure () -> String) throws {
        guard rc == MOSQ_ERR_SUCCESS.rawValue else {
            if rc == MOSQ_ERR_NO_CONN.rawValue { throw MQTTError.notConnected }
            throw MQTTError.requestFailed("\(what()): \(String(cString: mosquitto_strerror(rc)))")
        }
    }

    // MARK: Network thread

    private func runLoop() {
        var attempt = 0
        var nextConnection: UInt64 = 0
        while !lock.withLock({ _ in stopRequested }) {
            nextConnection += 1
            let id = MQTTConnectionID(rawValue: nextConnection)
            let outcome = runConnection(id)
            if lock.withLock({ _ in stopRequested }) { break }
            if outcome.wasConnected { attempt = 0 }
            let delay = configuration.backoff.delay(attempt: attempt)
            attempt += 1
            if outcome.wasConnected {
                logger.warning("MQTT connection \(id) lost: \(outcome.error); reconnecting in \(delay)")
            } else {
                logger.error("\(outcome.error); retrying in \(delay)")
                reportFromThread(.connectionFailed(outcome.error, retryIn: delay))
            }
            _ = wakeUp.wait(timeout: .now() + .nanoseconds(Int(delay.nanoseconds)))
        }
    }

    private struct ConnectionOutcome {
        var wasConnected: Bool
        var error: MQTTError
    }

    /// One connection's whole life on a fresh libmosquitto instance.
    private func runConnection(_ id: MQTTConnectionID) -> ConnectionOutcome {
        context.begin(id, onConnected: { [self] in lock.withLock { _ in connection = id } })
        let contextPointer = Unmanaged.passUnretained(context).toOpaque()
        guard let mosq = mosquitto_new(configuration.clientID, true, contextPointer) else {
            return ConnectionOutcome(wasConnected: false, error: .requestFailed("mosquitto_new failed (out of memory)"))
        }
        defer { mosquitto_destroy(mosq) }
        do {
            try configure(mosq)
        } catch let error as MQTTError {
            return ConnectionOutcome(wasConnected: false, error: error)
        } catch {
            return ConnectionOutcome(wasConnected: false, error: .requestFailed("\(error)"))
        }
        let keepalive = Int32(clamping: max(configuration.keepalive.components.seconds, 5))
        var rc = mosquitto_connect(mosq, configuration.host, Int32(configuration.port), keepalive)
        var savedErrno = errno
        if rc == MOSQ_ERR_SUCCESS.rawValue, lock.withLock({ _ in stopRequested }) {
            // Stopped while connecting: the CONNECT is out, so say goodbye (no Last Will) and close.
            mosquitto_disconnect(mosq)
            return ConnectionOutcome(wasConnected: false, error: .notConnected)
        }
        if rc == MOSQ_ERR_SUCCESS.rawValue {
            // Connected, the CONNECT sent: the loop runs the connection until it ends.
            // Handed over: this thread does not touch it until `linkEnded`.
            nonisolated(unsafe) let handedOver = mosq
            loop.execute { [self] in attach(handedOver) }
            linkEnded.wait()
            (rc, savedErrno) = (linkOutcome.code, linkOutcome.errno)
        }
        let error = classify(rc, errno: savedErrno)
        if context.wasConnected {
            reportFromThread(.disconnected(id, reason: error.description))
        }
        return ConnectionOutcome(wasConnected: context.wasConnected, error: error)
    }

    private func configure(_ mosq: OpaquePointer) throws {
        func require(_ rc: Int32, _ what: String) throws {
            guard rc == MOSQ_ERR_SUCCESS.rawValue else {
                throw MQTTError.invalidConfiguration("\(what): \(String(cString: mosquitto_strerror(rc)))")
            }
        }
        let version = configuration.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311
        try require(
            mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, version),
            "protocol version")
        // Messages are small and each should leave at once: with Nagle's algorithm a publish can
        // wait for the ACK of the one before, which the broker's delayed ACK holds up to 40 ms.
        try require(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
        if let credentials = configuration.credentials {
            try require(mosquitto_username_pw_set(mosq, credentials.username, password), "credentials")
        }
        if let will = configuration.will {
            let rc = will.payload.withUnsafeBytes { bytes in
                mosquitto_will_set(
                    mosq, will.topic, Int32(bytes.count), bytes.baseAddress,
                    will.qos.rawValue, will.retain)
            }
            try require(rc, "last will on \(will.topic)")
        }
        if let tls = configuration.tls {
            if let caFile = tls.caFile {
                guard FileManager.default.isReadableFile(atPath: caFile) else {
                    throw MQTTError.invalidConfiguration("mqtt.tls ca \(caFile) is not readable")
                }
                try require(
                    mosquitto_tls_set(mosq, caFile, nil, tls.certificateFile, tls.keyFile, nil),
                    "mqtt.tls ca, cert and key")
            } else {
                try require(mosquitto_int_option(mosq, MOSQ_OPT_TLS_USE_OS_CERTS, 1), "system CA store")
            }
            if !tls.verifyPeer {
                try require(mosquitto_tls_opts_set(mosq, 0, nil, nil), "tls verify off")
                try require(mosquitto_tls_insecure_set(mosq, true), "tls host name check off")
            }
        }
        // No disconnect callback: the loop's return code says why a connection ended, and
        // `runConnection` reports it once.
        mosquitto_connect_v5_callback_set(mosq, onConnect)
        mosquitto_publish_v5_callback_set(mosq, onPublish)
        mosquitto_message_v5_callback_set(mosq, onMessage)
        mosquitto_log_callback_set(mosq, onLog)
    }

    // MARK: The connection on the event loop

    private func attach(_ mosq: OpaquePointer) {
        let watch = loop.watch(mosquitto_socket(mosq)) { [self] readiness in serviceLink(readiness) }
        let keepalive = loop.makeTimer { [self] in serviceKeepalive() }
        link = LoopLink(mosq: mosq, watch: watch, keepalive: keepalive)
        keepalive.arm(after: .seconds(1))
        if lock.withLock({ _ in stopRequested }) { disconnectLink() } else { flushLink() }
    }

    private func serviceLink(_ readiness: EventLoop.Readiness) {
        guard let link else { return }
        // What the read brought (a CONNACK, PUBACKs, messages), once libmosquitto has returned.
        defer { context.outlet.deliver() }
        if readiness.isReadable || readiness.isFailure {
            let rc = mosquitto_loop_read(link.mosq, 1)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { return detach(rc) }
        }
        flushLink()
    }

    /// Sends what libmosquitto has queued, as far as the socket takes it; asks the loop for
    /// writability while something is left.
    private func flushLink() {
        guard let link else { return }
        if mosquitto_want_write(link.mosq) {
            let rc = mosquitto_loop_write(link.mosq, 1)
            guard rc == MOSQ_ERR_SUCCESS.rawValue else { return detach(rc) }
        }
        // libmosquitto closes the socket itself once its DISCONNECT is out.
        guard mosquitto_socket(link.mosq) >= 0 else { return detach(MOSQ_ERR_NO_CONN.rawValue) }
        let wantsWritable = mosquitto_want_write(link.mosq)
        if wantsWritable != link.wantsWritable {
            loop.watchWritability(link.watch, wantsWritable)
            link.wantsWritable = wantsWritable
        }
    }

    /// Pings and the keepalive's timeout, once a second; after `stop()`, the end of the wait for
    /// the DISCONNECT to go out (`disconnectBound`).
    private func serviceKeepalive() {
        guard let link else { return }
        defer { context.outlet.deliver() }
        if let deadline = link.disconnectDeadline, EventLoop.now() >= deadline {
            return detach(MOSQ_ERR_NO_CONN.rawValue)
        }
        let rc = mosquitto_loop_misc(link.mosq)
        guard rc == MOSQ_ERR_SUCCESS.rawValue else { return detach(rc) }
        flushLink()
        self.link?.keepalive.arm(after: .seconds(1))
    }

    /// Queues the DISCONNECT (no Last Will) and sends it; the connection ends once it is out, or
    /// after `disconnectBound` of a broker that does not take it (a TLS handshake it never
    /// answers, a full socket).
    private func disconnectLink() {
        guard let link, link.disconnectDeadline == nil else { return }
        link.disconnectDeadline = EventLoop.now() + Self.disconnectBound
        link.keepalive.arm(after: Self.disconnectBound)
        mosquitto_disconnect(link.mosq)
        flushLink()
    }

    /// Hands the ended connection back to the client's thread.
    private func detach(_ rc: Int32) {
        guard let link else { return }
        let savedErrno = errno
        self.link = nil
        link.keepalive.disarm()
        loop.unwatch(link.watch)
        lock.withLock { _ in connection = nil }
        linkOutcome = LinkOutcome(code: rc, errno: savedErrno)
        linkEnded.signal()
        let waiters = linkEndWaiters
        linkEndWaiters = []
        if !waiters.isEmpty { context.outlet.end() }
        for waiter in waiters { waiter.resume() }
    }

    private func classify(_ rc: Int32, errno savedErrno: Int32) -> MQTTError {
        if let code = context.refusalCode {
            let reason =
                configuration.protocolVersion == .v5
                ? String(cString: mosquitto_reason_string(code))
                : String(cString: mosquitto_connack_string(code))
            // 3.1.1: 4 bad user name or password, 5 not authorized; 5.0: 0x86, 0x87.
            let authCodes: Set<Int32> = configuration.protocolVersion == .v5 ? [0x86, 0x87] : [4, 5]
            return authCodes.contains(code) ? .notAuthorized(reason) : .brokerRefused(code: Int(code), reason: reason)
        }
        let address = "\(configuration.host):\(configuration.port)"
        switch rc {
        case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue:
            let detail = context.lastError ?? "handshake with \(address) failed"
            if detail.contains("certificate verify failed") || detail.contains("verify") {
                return .tlsVerificationFailed(detail)
            }
            return .tls(detail)
        case MOSQ_ERR_ERRNO.rawValue:
            if savedErrno == ECONNREFUSED { return .connectionRefused(host: configuration.host, port: configuration.port) }
            return .network("\(address): \(String(cString: strerror(savedErrno)))")
        case MOSQ_ERR_EAI.rawValue:
            return .network("cannot resolve broker host \(configuration.host)")
        case MOSQ_ERR_CONN_LOST.rawValue, MOSQ_ERR_NO_CONN.rawValue:
            return .network("connection to \(address) lost")
        default:
            return .network("\(address): \(String(cString: mosquitto_strerror(rc)))")
        }
    }
}

/// Reference-type state the C callbacks reach through libmosquitto's `obj` pointer. Touched by one
/// thread at a time (the client's while it connects, the event loop's while connected, where every
/// callback and publish runs): not `Sendable`, reached only through the client, whose
/// `@unchecked Sendable` says how it is handed over.
private final class CallbackContext {
    /// Where the callbacks' events wait for the end of libmosquitto's call; the loop's only.
    let outlet = EventOutlet()
    /// Message ids of this connection whose delivery is reported (`publish(reportsDelivery:)`).
    var reportedDeliveries: Set<Int32> = []
    /// Messages handed to libmosquitto on this connection that the broker has not taken yet.
    private var backlog = 0
    private let maximumBacklog: Int
    /// Since the backlog reached `maximumBacklog`, until it is down to half of it.
    private(set) var isBehind = false
    private(set) var connection = MQTTConnectionID(rawValue: 0)
    private(set) var wasConnected = false
    private(set) var refusalCode: Int32?
    private(set) var lastError: String?
    private var onConnected: () -> Void = {}

    init(maximumBacklog: Int) {
        self.maximumBacklog = maximumBacklog
    }

    /// A message was handed to libmosquitto.
    func published() {
        backlog += 1
        if backlog >= maximumBacklog { isBehind = true }
    }

    /// libmosquitto says a message is done with (sent at QoS 0, acknowledged above).
    func finished() {
        backlog = max(0, backlog - 1)
        if isBehind, backlog <= maximumBacklog / 2 {
            isBehind = false
            outlet.report(.caughtUp(connection))
        }
    }

    func begin(_ id: MQTTConnectionID, onConnected: @escaping () -> Void) {
        connection = id
        reportedDeliveries.removeAll()
        backlog = 0
        isBehind = false
        wasConnected = false
        refusalCode = nil
        lastError = nil
        self.onConnected = onConnected
    }

    func connack(_ code: Int32) {
        if code == 0 {
            wasConnected = true
            onConnected()
            outlet.report(.connected(connection))
        } else {
            refusalCode = code
        }
    }

    func log(level: Int32, _ line: String) {
        if level & MOSQ_LOG_ERR != 0 { lastError = line }
    }

    static func from(_ pointer: UnsafeMutableRawPointer?) -> CallbackContext? {
        pointer.map { Unmanaged<CallbackContext>.fromOpaque($0).takeUnretainedValue() }
    }
}

private let mosquittoLibraryInitialized: Int32 = mosquitto_lib_init()

private let onConnect: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, OpaquePointer?) -> Void = {
    mosq, object, rc, _, _ in
    // The log is read for what kept a connection from being made (`classify`: a TLS handshake's
    // error, say); once made, a callback would only have libmosquitto format a line for every
    // packet sent and received.
    if rc == 0 { mosquitto_log_callback_set(mosq, nil) }
    CallbackContext.from(object)?.connack(rc)
}

private let onPublish: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, Int32, OpaquePointer?) -> Void = {
    _, object, messageID, reasonCode, _ in
    guard let context = CallbackContext.from(object) else { return }
    context.finished()
    guard context.reportedDeliveries.remove(messageID) != nil else { return }
    context.outlet.report(.delivered(context.connection, messageID: messageID, reasonCode: reasonCode))
}

private let onMessage:
    @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafePointer<mosquitto_message>?, OpaquePointer?) -> Void = {
        _, object, message, _ in
        guard let context = CallbackContext.from(object), let message = message?.pointee,
            let topic = message.topic
        else { return }
        let payload: [UInt8] =
            message.payload.map {
                Array(UnsafeRawBufferPointer(start: $0, count: Int(message.payloadlen)))
            } ?? []
        context.outlet.report(
            .message(
                MQTTMessage(
                    topic: String(cString: topic), payload: payload,
                    qos: MQTTQoS(rawValue: message.qos) ?? .atMostOnce, retain: message.retain)))
    }

private let onLog: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, Int32, UnsafePointer<CChar>?) -> Void = {
    _, object, level, line in
    guard let line else { return }
    CallbackContext.from(object)?.log(level: level, String(cString: line))
}

/// The client's events on their way to the sink, on the loop only. An event is reported where it
/// is made (in a libmosquitto callback, in `publish`) and delivered when the client's code is done
/// with libmosquitto (the end of the socket's or the keepalive's handler, a turn of its own after
/// a call into the client): the sink may call the client, never inside libmosquitto's own call.
private final class EventOutlet {
    /// Set by `start` before anything reports; nil once `stop()` ended the events.
    var sink: MQTTClientEventSink?
    /// Reported, not delivered yet, in order; its storage is kept from one delivery to the next.
    private var pending: [MQTTClientEvent] = []
    /// A delivery is under way: an event the sink's calls make joins it rather than nesting one.
    private var isDelivering = false
    /// A delivery of its own was scheduled and has not run yet.
    private var isScheduled = false

    init() { pending.reserveCapacity(16) }

    func report(_ event: MQTTClientEvent) {
        if sink != nil { pending.append(event) }
    }

    /// Whether a call into the client made events that no delivery under way or scheduled will
    /// take; if so, the caller schedules one, and this counts it as scheduled.
    func needsDelivery() -> Bool {
        guard !pending.isEmpty, !isDelivering, !isScheduled else { return false }
        isScheduled = true
        return true
    }

    func deliver() {
        guard !isDelivering else { return }
        isDelivering = true
        isScheduled = false
        var index = 0
        while index < pending.count, let sink {
            let event = pending[index]
            index += 1
            sink(event)
        }
        pending.removeAll(keepingCapacity: true)
        isDelivering = false
    }

    /// `stop()`: nothing more reaches the sink, not even what is reported and not delivered yet.
    func end() {
        sink = nil
        pending.removeAll()
    }
}

/// The connection the event loop runs: libmosquitto's instance, the socket's watch and the
/// keepalive timer. Only touched on the loop.
private final class LoopLink {
    let mosq: OpaquePointer
    let watch: EventLoop.Watch
    let keepalive: EventLoop.Timer
    var wantsWritable = false
    /// Set by `stop()`: when the connection ends whether or not the DISCONNECT went out.
    var disconnectDeadline: LoopInstant?

    init(mosq: OpaquePointer, watch: EventLoop.Watch, keepalive: EventLoop.Timer) {
        self.mosq = mosq
        self.watch = watch
        self.keepalive = keepalive
    }
}

/// How the loop's connection ended: libmosquitto's code and the errno beside it.
private struct LinkOutcome {
    var code: Int32
    var errno: Int32
}
