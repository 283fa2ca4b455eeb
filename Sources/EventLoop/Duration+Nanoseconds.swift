extension Duration {
    /// Whole nanoseconds, clamped at zero: the unit of the loop's clock (`EventLoop.now()`) and
    /// of the timestamps measured against it (GPIO edges, sensors' deadlines).
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        let ns = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return ns > 0 ? UInt64(ns) : 0
    }
}
