/// A moment on the event loop's clock (CLOCK_MONOTONIC, read by `EventLoop.now()`): the one time
/// base of every deadline, from the pure state machines that take it as an argument up to the
/// `DeadlineTimer` that waits for it.
///
/// Monotonic, not the wall clock: a Raspberry Pi has no real-time clock, so its wall clock jumps
/// (by months or years) when NTP first syncs after boot, and a deadline on it would stall or
/// burst. `Date` is only for times shown to people or put in a payload.
public struct LoopInstant: Comparable, Hashable, Sendable {
    /// Nanoseconds since the clock's origin (the machine's boot).
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    public static func < (lhs: LoopInstant, rhs: LoopInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// `duration` later (earlier for a negative one), clamped to the clock's range.
    public static func + (instant: LoopInstant, duration: Duration) -> LoopInstant {
        let delta = duration.signedNanoseconds
        // A duration beyond 292 years (clamped to `Int64`'s nanoseconds) is beyond the clock's end.
        if delta == .max { return LoopInstant(nanoseconds: .max) }
        let moved =
            delta >= 0
            ? instant.nanoseconds.addingReportingOverflow(UInt64(delta))
            : instant.nanoseconds.subtractingReportingOverflow(delta.magnitude)
        guard moved.overflow else { return LoopInstant(nanoseconds: moved.partialValue) }
        return LoopInstant(nanoseconds: delta >= 0 ? .max : 0)
    }

    public static func - (instant: LoopInstant, duration: Duration) -> LoopInstant {
        instant + (.zero - duration)
    }

    public static func += (instant: inout LoopInstant, duration: Duration) {
        instant = instant + duration
    }

    /// The time from `earlier` to `later`: negative when `later` is the earlier one.
    public static func - (later: LoopInstant, earlier: LoopInstant) -> Duration {
        later >= earlier
            ? .nanoseconds(Int64(clamping: later.nanoseconds - earlier.nanoseconds))
            : .zero - .nanoseconds(Int64(clamping: earlier.nanoseconds - later.nanoseconds))
    }
}

extension Duration {
    /// Whole nanoseconds, clamped at zero and at `UInt64`'s end: the unit of the loop's clock and
    /// of the timestamps measured against it (GPIO edges, sensors' deadlines).
    public var nanoseconds: UInt64 { UInt64(clamping: signedNanoseconds) }

    /// Whole nanoseconds, negative for a negative duration, clamped to `Int64`. From the
    /// attoseconds in one division: `components` divides twice, and cost about 190 instructions
    /// each time a deadline is moved. A duration under nine seconds (the intervals of the event
    /// path) has attoseconds that fit 64 bits, whose division by a constant is a multiplication;
    /// a 128-bit division is a call of about 60 instructions (docs/performance.md).
    fileprivate var signedNanoseconds: Int64 {
        let attoseconds = attoseconds
        if let narrow = Int64(exactly: attoseconds) { return narrow / 1_000_000_000 }
        return Int64(clamping: attoseconds / 1_000_000_000)
    }
}
