import EventLoop
import Foundation
import TestHarness
import Testing

@testable import MQTTClient
@testable import MQTTMirror

@Suite("The client on the event loop, against a real mosquitto", .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct ClientOnTheLoopTests {
    /// A client started on `broker` with its events recorded, once its first connection is made.
    static func connectedClient(
        to broker: Broker, clientID: String
    ) async throws -> (MQTTClient, EventLog<MQTTClientEvent>, MQTTConnectionID) {
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: broker.port, clientID: clientID),
            logger: testLogger)
        let events = EventLog<MQTTClientEvent>()
        client.start(eventSink: events.append)
        guard case .connected(let connection) = try await events.next(where: \.isConnected) else {
            throw MQTTError.notConnected
        }
        return (client, events, connection)
    }

    /// A `.delivered` event comes only for the messages published with `reportsDelivery`: values
    /// and state cost no event each, while the outbox's events still learn of their PUBACK.
    @Test(.timeLimit(.minutes(1))) func onlyMessagesPublishedWithReportsDeliveryAreReported() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let (client, events, connection) = try await Self.connectedClient(to: broker, clientID: "delivery-reports")
        #expect(threadNames().contains(MQTTClient.threadName), "the network thread is named")
        // PUBACKs come in the order the messages went out: the unreported ones are acknowledged
        // before the last reported one is.
        var unreported: [Int32] = []
        var reported: [Int32] = []
        for index in 0..<3 {
            unreported.append(try client.publish(MQTTMessage(topic: "test/value", text: "\(index)"), on: connection))
            reported.append(
                try client.publish(MQTTMessage(topic: "test/event", text: "\(index)"), on: connection, reportsDelivery: true))
        }
        reported.append(
            try client.publish(
                MQTTMessage(topic: "test/event", text: "at most once", qos: .atMostOnce), on: connection,
                reportsDelivery: true))
        var delivered: [Int32] = []
        while delivered.count < reported.count {
            guard case .delivered(_, let messageID, _) = try await events.next(where: \.isDelivered) else { continue }
            delivered.append(messageID)
        }
        await client.stop()
        #expect(Set(delivered) == Set(reported))
        #expect(Set(delivered).isDisjoint(with: unreported))
        #expect(!events.all.contains { if case .connectionFailed = $0 { true } else { false } })
    }

    /// Every event reaches the sink on the event loop's thread, in the order it happened: those
    /// of libmosquitto's callbacks (connected, delivered, caught up, a message) and those the
    /// client's own thread makes (the connection's end when the broker is gone, each failed
    /// attempt to reach it again), which it hands to the loop rather than calling the sink itself.
    @Test(.timeLimit(.minutes(1))) func everyEventReachesTheSinkOnTheEventLoopInOrder() async throws {
        struct Delivery: Sendable {
            let event: MQTTClientEvent
            let onLoop: Bool
        }
        let broker = try Broker()
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: "127.0.0.1", port: broker.port, clientID: "sink-on-loop",
                backoff: MQTTBackoff(initial: .milliseconds(50), maximum: .milliseconds(100)), maximumBacklog: 2),
            logger: testLogger)
        let log = EventLog<Delivery>()
        client.start { event in log.append(Delivery(event: event, onLoop: EventLoop.shared.inLoop)) }
        guard case .connected(let connection) = try await log.next(where: { $0.event.isConnected }).event else { return }
        try client.subscribe("test/echo", on: connection)
        // Two messages in one turn of the loop, before either's PUBACK can be read: the backlog
        // reaches its maximum (2), and the acknowledgements bring it back (`.caughtUp`).
        try EventLoop.shared.runAndWait {
            try client.publish(MQTTMessage(topic: "test/echo", text: "one"), on: connection, reportsDelivery: true)
            try client.publish(MQTTMessage(topic: "test/echo", text: "two"), on: connection)
        }
        _ = try await log.first { $0.event.isDelivered }
        _ = try await log.first { if case .caughtUp = $0.event { true } else { false } }
        _ = try await log.first { if case .message = $0.event { true } else { false } }
        broker.stop()
        _ = try await log.first { if case .disconnected(connection, _) = $0.event { true } else { false } }
        _ = try await log.first { if case .connectionFailed(.connectionRefused, _) = $0.event { true } else { false } }
        await client.stop()

        let deliveries = log.all
        let offTheLoop = deliveries.filter { !$0.onLoop }.map(\.event)
        #expect(offTheLoop.isEmpty, "events delivered off the event loop: \(offTheLoop)")
        // The connection's end (made on the client's thread) before the first failed attempt to
        // reach the broker again (likewise), after everything the connection's callbacks made.
        let kinds = deliveries.map(\.event.kind)
        let connectionEnd = try #require(kinds.firstIndex(of: "disconnected"))
        let firstFailure = try #require(kinds.firstIndex(of: "connectionFailed"))
        #expect(connectionEnd < firstFailure, "\(kinds)")
        #expect(Set(kinds[..<connectionEnd]) == ["connected", "delivered", "caughtUp", "message"], "\(kinds)")
        #expect(kinds.first == "connected")
    }

    /// The sink is never called inside a call into the client: a QoS 0 message is delivered once
    /// handed over, yet its `.delivered` comes after `publish` returned, when the caller has
    /// recorded the message id it waits for (the outbox's entry, `OutboxDelivery.sent`).
    @Test(.timeLimit(.minutes(1))) func aDeliveryReachesTheSinkAfterThePublishReturned() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let (client, events, connection) = try await Self.connectedClient(to: broker, clientID: "delivery-after-publish")
        let (messageID, deliveredDuringPublish) = try EventLoop.shared.runAndWait {
            let messageID = try client.publish(
                MQTTMessage(topic: "test/event", text: "at most once", qos: .atMostOnce), on: connection, reportsDelivery: true)
            return (messageID, events.all.contains(where: \.isDelivered))
        }
        #expect(!deliveredDuringPublish)
        let delivered = try await events.next(where: \.isDelivered)
        #expect(delivered == .delivered(connection, messageID: messageID, reasonCode: 0))
        await client.stop()
    }

    /// A message that does not fit the socket's buffer is sent as the broker takes it: the loop
    /// asks for writability while libmosquitto has bytes left, rather than leaving them for the
    /// keepalive's tick each second, which would take many seconds for 32 MB.
    @Test(.timeLimit(.minutes(1))) func aMessageLargerThanTheSocketBufferGoesOutAtOnce() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let subscriber = try await TestSubscriber(port: broker.port, filters: ["test/large"])
        let (client, _, connection) = try await Self.connectedClient(to: broker, clientID: "large")
        let payload = [UInt8](repeating: 0x5a, count: 32 << 20)
        try client.publish(MQTTMessage(topic: "test/large", payload: payload, qos: .atMostOnce), on: connection)
        let received = try await subscriber.next(on: "test/large", timeout: .seconds(4))
        #expect(received.payload == payload)
        await client.stop()
        await subscriber.stop()
    }
}

extension MQTTClientEvent {
    fileprivate var isConnected: Bool { if case .connected = self { true } else { false } }
    fileprivate var isDelivered: Bool { if case .delivered = self { true } else { false } }
    /// The case's name, for comparing orders.
    fileprivate var kind: String {
        switch self {
        case .connected: "connected"
        case .disconnected: "disconnected"
        case .connectionFailed: "connectionFailed"
        case .delivered: "delivered"
        case .caughtUp: "caughtUp"
        case .message: "message"
        }
    }
}

/// The names of this process's threads, as `ps -L` shows them.
private func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .newlines) }
}
