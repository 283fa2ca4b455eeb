import Foundation
import Logging
import MQTTClient
import MQTTMirror

/// Collects every message under a topic filter with gattway's own MQTT client, each stamped with
/// the time it arrived (for latency figures). Waiting suspends on a continuation that the
/// matching message (or the timeout) resumes; nothing polls.
public final class MQTTWatcher: @unchecked Sendable {
    public struct Arrival: Sendable {
        public let message: MQTTMessage
        public let at: Date
        public var topic: String { message.topic }
        public var text: String? { message.text }
    }

    private struct Waiter {
        let predicate: @Sendable (MQTTMessage) -> Bool
        let continuation: CheckedContinuation<Arrival?, Never>
        var timeout: Task<Void, Never>?
    }

    private let client: MQTTClient
    private let lock = NSLock()
    // Guarded by `lock`.
    private var arrivals: [Arrival] = []
    private var waiters: [UUID: Waiter] = [:]
    private var connection: MQTTConnectionID?

    /// Connects to the broker on the loopback `port` and subscribes to `filter` (again on every
    /// reconnection).
    public init(port: Int, filter: String) throws {
        client = try MQTTClient(
            configuration: MQTTClientConfiguration(
                host: "127.0.0.1", port: port,
                clientID: "watcher-\(UUID())"),
            logger: Logger(label: "watcher"))
        client.start { [client, weak self] event in
            switch event {
            case .connected(let id):
                _ = try? client.subscribe(filter, on: id)
                self?.lock.withLock { self?.connection = id }
            case .message(let message):
                self?.received(Arrival(message: message, at: Date()))
            default: break
            }
        }
    }

    private func received(_ arrival: Arrival) {
        let matched: [CheckedContinuation<Arrival?, Never>] = lock.withLock {
            arrivals.append(arrival)
            var resumed: [CheckedContinuation<Arrival?, Never>] = []
            for (id, waiter) in waiters where waiter.predicate(arrival.message) {
                waiter.timeout?.cancel()
                waiters[id] = nil
                resumed.append(waiter.continuation)
            }
            return resumed
        }
        for continuation in matched { continuation.resume(returning: arrival) }
    }

    /// How many messages arrived so far: a mark for `first(after:)`.
    public var count: Int { lock.withLock { arrivals.count } }

    /// Every message that arrived so far, in order.
    public var messages: [Arrival] { lock.withLock { arrivals } }

    /// The first message at position `mark` or later that satisfies `predicate`, waiting up to
    /// `timeout` for it; nil when none came.
    public func first(
        after mark: Int = 0, timeout: Duration = .seconds(20),
        where predicate: @escaping @Sendable (MQTTMessage) -> Bool
    ) async -> Arrival? {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let match: Arrival? = lock.withLock {
                let match = arrivals.dropFirst(mark).first { predicate($0.message) }
                if match == nil { waiters[id] = Waiter(predicate: predicate, continuation: continuation) }
                return match
            }
            if let match {
                continuation.resume(returning: match)
                return
            }
            let timeout = Task { [weak self] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                self?.expire(id)
            }
            lock.withLock {
                if waiters[id] != nil { waiters[id]?.timeout = timeout } else { timeout.cancel() }
            }
        }
    }

    private func expire(_ id: UUID) {
        let waiter = lock.withLock { waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(returning: nil)
    }

    public func publish(_ topic: String, _ text: String) throws {
        try publish(topic, payload: Array(text.utf8))
    }

    public func publish(_ topic: String, payload: [UInt8]) throws {
        guard let connection = lock.withLock({ connection }) else { throw MQTTError.notConnected }
        _ = try client.publish(MQTTMessage(topic: topic, payload: payload), on: connection)
    }

    public func stop() async {
        await client.stop()
    }
}
