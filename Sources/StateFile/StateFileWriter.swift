import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one thread that writes state files for the running service, so the event loop never waits
/// for the disk: `StateFile.write`'s two fsyncs take tens of milliseconds on an SD card, which
/// the loop would otherwise spend away from GPIO edges and Bluetooth.
///
/// `GatewayService` makes one and hands it to everything that writes under the state directory
/// (bonds, counter totals, trigger settings, the discovery record, the BTHome counter, the static
/// address, the MQTT outbox's compaction and fsyncs), so every write to the disk is on one thread,
/// in the order it was asked for, and the service's stop waits for them all (`idle`).
///
/// A write hands its bytes over and returns; the writer replaces the file (`StateFile.write`) in
/// its turn and then calls the completion, on its own thread (a caller that must act on the
/// outcome on the loop hops there). Writes to the same file coalesce: while one waits, a newer one
/// replaces its bytes, so only the newest is written and every completion waiting for that file
/// gets its outcome. Other work that must not block the loop and must keep its order with the
/// writes (the MQTT outbox's journal: its fsyncs and compactions) runs on the same thread through
/// `perform`.
public final class StateFileWriter: Sendable {
    public typealias Completion = @Sendable (StateFileError?) -> Void

    private struct Waiting {
        var bytes: [UInt8]
        var mode: mode_t
        var completions: [Completion]
    }

    private let queue = DispatchQueue(label: "gattway-state")
    /// Per path, the newest bytes not yet taken by the writer.
    private let waiting = Mutex<[String: Waiting]>([:])
    /// Added before each write and each `perform`: tests stand in a slow disk with it.
    private let delay: Duration

    public init(delayBeforeEachWrite delay: Duration = .zero) {
        self.delay = delay
    }

    /// Replaces `path` with `bytes` on the writer's thread (see the type), then calls `completion`
    /// there with nil or the error.
    public func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600, completion: @escaping Completion) {
        let alreadyWaiting = waiting.withLock { waiting in
            if var earlier = waiting[path] {
                earlier.bytes = bytes
                earlier.mode = mode
                earlier.completions.append(completion)
                waiting[path] = earlier
                return true
            }
            waiting[path] = Waiting(bytes: bytes, mode: mode, completions: [completion])
            return false
        }
        guard !alreadyWaiting else { return }
        queue.async { self.writeNewest(path) }
    }

    /// Replaces `path` with `bytes` on the writer's thread (see the type) and returns once that is
    /// done: nil, or the error.
    public func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o600) async -> StateFileError? {
        await withCheckedContinuation { (done: CheckedContinuation<StateFileError?, Never>) in
            write(bytes, to: path, mode: mode) { done.resume(returning: $0) }
        }
    }

    /// Runs `work` on the writer's thread, after everything handed to it before.
    public func perform(_ work: @escaping @Sendable () -> Void) {
        queue.async {
            self.waitForTheDisk()
            work()
        }
    }

    /// Returns once everything handed to the writer so far is done: before the service exits, so
    /// its last writes are on disk.
    public func idle() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }

    /// Blocks the caller until everything handed to the writer so far is done. Only for a caller
    /// that may block and must see each write end before it goes on: the simulated sensor
    /// driver, which runs in virtual time on a test's thread (never on the event loop).
    public func waitUntilIdle() {
        queue.sync {}
    }

    private func writeNewest(_ path: String) {
        waitForTheDisk()
        guard let newest = waiting.withLock({ $0.removeValue(forKey: path) }) else { return }
        var failure: StateFileError?
        do {
            try StateFile.write(newest.bytes, to: path, mode: newest.mode)
        } catch {
            failure = error
        }
        for completion in newest.completions { completion(failure) }
    }

    private func waitForTheDisk() {
        if delay > .zero {
            let (seconds, attoseconds) = delay.components
            var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
            var remaining = timespec()
            while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
        }
    }
}
