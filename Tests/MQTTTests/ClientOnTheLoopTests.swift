import Foundation
import TestHarness
import Testing

@testable import MQTTClient
@testable import MQTTMirror

@Suite("The client on the event loop, against a real mosquitto", .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct ClientOnTheLoopTests {
    /// A `.delivered` event comes only for the messages published with `reportsDelivery`: values
    /// and state cost no event each, while the outbox's events still learn of their PUBACK.
    @Test(.timeLimit(.minutes(1))) func onlyMessagesPublishedWithReportsDeliveryAreReported() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: broker.port, clientID: "delivery-reports"),
            logger: testLogger)
        client.start()
        var unreported: [Int32] = []
        var reported: [Int32] = []
        var delivered: [Int32] = []
        for await event in client.events {
            switch event {
            case .connected(let connection):
                #expect(threadNames().contains(MQTTClient.threadName), "the network thread is named")
                // PUBACKs come in the order the messages went out: the unreported ones are
                // acknowledged before the last reported one is.
                for index in 0..<3 {
                    unreported.append(try client.publish(MQTTMessage(topic: "test/value", text: "\(index)"), on: connection))
                    reported.append(
                        try client.publish(
                            MQTTMessage(topic: "test/event", text: "\(index)"), on: connection, reportsDelivery: true))
                }
                reported.append(
                    try client.publish(
                        MQTTMessage(topic: "test/event", text: "at most once", qos: .atMostOnce), on: connection,
                        reportsDelivery: true))
            case .delivered(_, let messageID, _):
                delivered.append(messageID)
            case .connectionFailed(let error, _):
                Issue.record("no connection: \(error)")
            default:
                break
            }
            if !reported.isEmpty && delivered.count == reported.count { break }
        }
        await client.stop()
        #expect(Set(delivered) == Set(reported))
        #expect(Set(delivered).isDisjoint(with: unreported))
    }

    /// A message that does not fit the socket's buffer is sent as the broker takes it: the loop
    /// asks for writability while libmosquitto has bytes left, rather than leaving them for the
    /// keepalive's tick each second, which would take many seconds for 32 MB.
    @Test(.timeLimit(.minutes(1))) func aMessageLargerThanTheSocketBufferGoesOutAtOnce() async throws {
        let broker = try Broker()
        defer { broker.stop() }
        let subscriber = try await TestSubscriber(port: broker.port, filters: ["test/large"])
        let client = try MQTTClient(
            configuration: MQTTClientConfiguration(host: "127.0.0.1", port: broker.port, clientID: "large"),
            logger: testLogger)
        client.start()
        let payload = [UInt8](repeating: 0x5a, count: 32 << 20)
        for await event in client.events {
            guard case .connected(let connection) = event else { continue }
            try client.publish(MQTTMessage(topic: "test/large", payload: payload, qos: .atMostOnce), on: connection)
            break
        }
        let received = try await subscriber.next(on: "test/large", timeout: .seconds(4))
        #expect(received.payload == payload)
        await client.stop()
        await subscriber.stop()
    }
}

/// The names of this process's threads, as `ps -L` shows them.
private func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .newlines) }
}
