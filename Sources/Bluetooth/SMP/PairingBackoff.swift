import BluetoothCore
import LoopClock

/// Repeated-attempts protection (Core Vol 3 Part H 2.3.6): after a pairing with a peer fails
/// authentication, that peer must wait before pairing again, and the wait doubles with each
/// further failure. Time is a moment on the loop's clock (`LoopInstant`), passed in by the caller.
public struct PairingBackoff: Hashable, Sendable {
    struct Entry: Hashable, Sendable {
        var failures: Int
        var blockedUntil: LoopInstant
    }

    public let base: Duration
    public let maximum: Duration
    /// Bounds memory when a peer cycles through addresses; the entries expiring first go first.
    public let capacity: Int
    private(set) var entries: [BluetoothAddress: Entry] = [:]

    public init(base: Duration, maximum: Duration, capacity: Int = 256) {
        self.base = base
        self.maximum = maximum
        self.capacity = capacity
    }

    /// Whether `peer` must still wait at `now`.
    public func isBlocked(_ peer: BluetoothAddress, now: LoopInstant) -> Bool {
        guard let entry = entries[peer] else { return false }
        return now < entry.blockedUntil
    }

    /// Records a failed attempt: the wait is base × 2^(failures − 1), at most `maximum`.
    public mutating func recordFailure(_ peer: BluetoothAddress, now: LoopInstant) {
        let failures = (entries[peer]?.failures ?? 0) + 1
        var wait = base
        for _ in 1..<min(failures, 32) where wait < maximum { wait = wait * 2 }
        entries[peer] = Entry(failures: failures, blockedUntil: now + min(wait, maximum))
        if entries.count > capacity, let oldest = entries.min(by: { $0.value.blockedUntil < $1.value.blockedUntil }) {
            entries[oldest.key] = nil
        }
    }

    /// A successful pairing clears the peer's record.
    public mutating func recordSuccess(_ peer: BluetoothAddress) {
        entries[peer] = nil
    }
}
