#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CLOCK_MONOTONIC in nanoseconds: the clock the kernel stamps GPIO edge events with.
public func monotonicNowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

extension Duration {
    /// Whole nanoseconds, clamped at zero.
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        let ns = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return ns > 0 ? UInt64(ns) : 0
    }
}
