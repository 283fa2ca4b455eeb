import LoopClock

/// Moments on the loop's clock counted from its origin, so the pure tests write them as the
/// durations they are (`now: .seconds(35)`).
extension LoopInstant {
    static let zero = LoopInstant(nanoseconds: 0)

    static func seconds(_ seconds: some BinaryInteger) -> LoopInstant { zero + .seconds(seconds) }

    static func milliseconds(_ milliseconds: some BinaryInteger) -> LoopInstant { zero + .milliseconds(milliseconds) }
}
