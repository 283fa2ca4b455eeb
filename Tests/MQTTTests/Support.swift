import EventLoop
import Foundation
import Logging
import TestHarness
import Testing

@testable import MQTTClient
@testable import MQTTMirror

let testLogger: Logger = {
    var logger = Logger(label: "mqtt-tests")
    logger.logLevel = ProcessInfo.processInfo.environment["MQTT_TEST_LOG"] == nil ? .critical : .debug
    return logger
}()

/// A real MQTT client (our own `MQTTClient`) that records everything it receives on `filters`.
final class TestSubscriber: Sendable {
    private let client: MQTTClient
    private let inbox = Inbox()

    /// Returns once the broker has confirmed the subscriptions are active (a probe message
    /// published after SUBSCRIBE came back).
    init(port: Int, filters: [String], tls: MQTTTLSConfiguration? = nil) async throws {
        let id = "test-sub-\(UUID().uuidString.prefix(8))"
        client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: "127.0.0.1", port: port, clientID: id, tls: tls,
                backoff: MQTTBackoff(initial: .milliseconds(100), maximum: .milliseconds(500))), logger: testLogger)
        let probe = "test/probe/\(id)"
        let inbox = inbox
        let client = client
        client.start { event in
            switch event {
            case .connected(let connection):
                inbox.onLoop(with: connection) { $0.setConnection($1) }
                for filter in filters + [probe] { try? client.subscribe(filter, on: connection) }
                _ = try? client.publish(MQTTMessage(topic: probe, text: "probe"), on: connection)
            case .message(let message):
                inbox.onLoop(with: message) { $0.add($1) }
            default:
                break
            }
        }
        // Readiness, not a measured bound: under the whole suite's load the first connection to a
        // broker that has just started can take longer than a test's own waits.
        _ = try await next(on: probe, timeout: .seconds(30))
    }

    /// The next message on `topic` (in arrival order), or a failure after `timeout`.
    func next(on topic: String, timeout: Duration = .seconds(5)) async throws -> MQTTMessage {
        try await messages(on: topic, count: 1, timeout: timeout)[0]
    }

    func messages(on topic: String, count: Int, timeout: Duration = .seconds(5)) async throws -> [MQTTMessage] {
        if let messages = await inbox.take(topic: topic, count: count, until: ContinuousClock.now + timeout) {
            return messages
        }
        let got = await inbox.count(topic: topic)
        throw TestFailure("expected \(count) message(s) on \(topic) within \(timeout), got \(got)")
    }

    func publish(_ message: MQTTMessage) async throws {
        guard let connection = await inbox.connection else { throw MQTTError.notConnected }
        try client.publish(message, on: connection)
    }

    /// Messages on `topic` received so far, without waiting.
    func received(on topic: String) async -> [MQTTMessage] { await inbox.peek(topic: topic) }

    func stop() async {
        await client.stop()
    }
}

/// On the event loop, where the client's sink fills it in the call.
private actor Inbox {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    private(set) var connection: MQTTConnectionID?
    private var messages: [MQTTMessage] = []
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func add(_ message: MQTTMessage) {
        messages.append(message)
        for waiter in waiters { waiter.resume() }
        waiters = []
    }

    func setConnection(_ connection: MQTTConnectionID) { self.connection = connection }

    /// The first `count` messages on `topic`, waiting until `deadline` for them. Checking and
    /// waiting happen in one turn on the actor, so a message arriving in between still wakes the
    /// waiter (checking in one call and waiting in another lost that wake-up, and the caller then
    /// slept until the next message, whatever its topic).
    func take(topic: String, count: Int, until deadline: ContinuousClock.Instant) async -> [MQTTMessage]? {
        while true {
            if let messages = take(topic: topic, count: count) { return messages }
            guard ContinuousClock.now < deadline else { return nil }
            await waitForChange(until: deadline)
        }
    }

    private func take(topic: String, count: Int) -> [MQTTMessage]? {
        let indices = messages.indices.filter { messages[$0].topic == topic }
        guard indices.count >= count else { return nil }
        let taken = indices.prefix(count).map { messages[$0] }
        for index in indices.prefix(count).reversed() { messages.remove(at: index) }
        return taken
    }

    func peek(topic: String) -> [MQTTMessage] { messages.filter { $0.topic == topic } }
    func count(topic: String) -> Int { messages.filter { $0.topic == topic }.count }

    /// Suspends until a message arrives or `deadline` passes.
    private func waitForChange(until deadline: ContinuousClock.Instant) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(until: deadline)
            await self?.wakeAll()
        }
        await withCheckedContinuation { waiters.append($0) }
        timer.cancel()
    }

    private func wakeAll() {
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

extension MQTTMessage {
    var string: String { String(decoding: payload, as: UTF8.self) }
}
