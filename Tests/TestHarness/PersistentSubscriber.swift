import Foundation

/// `mosquitto_sub` with a persistent session (`-c`, QoS 1): messages published while it is cut
/// off (broker restarted) are kept for it by the broker, so it sees everything in order.
public final class PersistentSubscriber: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var buffer = ""

    public init(port: Int, topic: String) async throws {
        let id = "persistent-\(UUID().uuidString.prefix(8))"
        let probe = "test/probe/\(id)"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_sub")
        process.arguments = [
            "-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-c", "-i", id, "-v",
            "-t", topic, "-t", probe
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            self?.lock.withLock { self?.buffer += text }
        }
        try process.run()
        // Publish probes until one comes back: then the subscription is active.
        let deadline = ContinuousClock.now + .seconds(10)
        while lines().filter({ $0.hasPrefix(probe) }).isEmpty {
            guard ContinuousClock.now < deadline else { throw TestFailure("mosquitto_sub did not subscribe") }
            let publisher = Process()
            publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
            publisher.arguments = ["-h", "127.0.0.1", "-p", "\(port)", "-q", "1", "-t", probe, "-m", "probe"]
            publisher.standardOutput = FileHandle.nullDevice
            publisher.standardError = FileHandle.nullDevice
            try? publisher.run()
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Complete lines (`topic payload`) received so far, probes excluded by the caller.
    public func lines() -> [String] {
        lock.withLock { buffer.split(separator: "\n").map(String.init) }
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

    deinit {
        // SIGKILL: the test process's threads block SIGTERM, and children inherit that mask.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
    }
}
