import LoopClock

/// When new centrals may pair: the owner opens a window (`gattway pair`, a long press of the
/// pairing button, the first start without bonds) and pairing requests outside it are refused,
/// the way Zigbee's "permit join" or BlueZ's pairable timeout work. Bonded centrals encrypt with
/// their keys whether it is open or not: that is not pairing.
///
/// Pure: time is a moment on the loop's clock (`LoopInstant`), passed in.
public struct PairingWindow: Hashable, Sendable, CustomStringConvertible {
    public enum Policy: String, Hashable, Sendable {
        /// Pairing only while a window is open.
        case window
        /// Pairing at any time (no window needed): anyone in radio range can bond.
        case open
    }

    public let policy: Policy
    /// When the open window closes; nil while closed (or with `Policy.open`, always open).
    public private(set) var closesAt: LoopInstant?

    public init(policy: Policy) {
        self.policy = policy
    }

    /// Whether a new central may pair at `now`.
    public func isOpen(at now: LoopInstant) -> Bool {
        switch policy {
        case .open: true
        case .window: closesAt.map { now < $0 } ?? false
        }
    }

    /// How long the window stays open from `now`; nil when closed or with `Policy.open` (which has
    /// no end).
    public func remaining(at now: LoopInstant) -> Duration? {
        guard policy == .window, let closesAt, now < closesAt else { return nil }
        return closesAt - now
    }

    /// Opens the window for `length` from `now` (an open window gets the new end, which may be
    /// earlier: the last request says how long). With `Policy.open` nothing changes.
    public mutating func open(for length: Duration, at now: LoopInstant) {
        guard policy == .window, length > .zero else { return }
        closesAt = now + length
    }

    /// Closes the window at once; true when it was open.
    @discardableResult
    public mutating func close() -> Bool {
        defer { closesAt = nil }
        return closesAt != nil
    }

    /// The time the window closes by itself, for a timer; nil when nothing is scheduled.
    public var deadline: LoopInstant? { policy == .window ? closesAt : nil }

    /// Closes the window when its time is up at `now`; true when this closed it.
    public mutating func expire(at now: LoopInstant) -> Bool {
        guard let closesAt, now >= closesAt else { return false }
        return close()
    }

    public var description: String {
        switch policy {
        case .open: "pairing open at all times"
        case .window: closesAt == nil ? "pairing window closed" : "pairing window open"
        }
    }
}
