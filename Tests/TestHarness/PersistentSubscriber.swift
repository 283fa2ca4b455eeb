import Foundation

/// `mosquitto_sub` with a persistent session (`-c`, QoS 1): messages published while it is cut
/// off (broker restarted) are kept for it by the broker, so it sees everything in order.
public final class PersistentSubscriber: Sendable {
    private let subscriber: ChildProcess

    public init(port: Int, topic: String) async throws {
        let id = "persistent-\(UUID().uuidString.prefix(8))"
        let probe = "test/probe/\(id)"
        subscriber = ChildProcess([
            "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-c", "-i", id, "-v",
            "-t", topic, "-t", probe
        ])
        try subscriber.start()
        // Publish probes until one comes back: then the subscription is active.
        let deadline = ContinuousClock.now + .seconds(10)
        while lines().filter({ $0.hasPrefix(probe) }).isEmpty {
            guard ContinuousClock.now < deadline else { throw TestFailure("mosquitto_sub did not subscribe") }
            try? ChildProcess(["/usr/bin/mosquitto_pub", "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", probe, "-m", "probe"])
                .start()
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Complete lines (`topic payload`) received so far, probes excluded by the caller.
    public func lines() -> [String] {
        subscriber.stdout.split(separator: "\n").map(String.init)
    }

    public func lines(on topic: String, count: Int, timeout: Duration) async throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let matching = lines().filter { $0.hasPrefix(topic + " ") }
            if matching.count >= count { return matching }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("expected \(count) message(s) on \(topic) within \(timeout), got \(matching.count)")
            }
            // Polling a child process's output; no completion signal to wait on.
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    deinit { subscriber.stop() }
}
