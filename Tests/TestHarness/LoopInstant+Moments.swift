import LoopClock

/// Moments on the loop's clock counted from its origin, so the pure tests write them as the
/// durations they are (`now: .seconds(35)`).
extension LoopInstant {
    public static let zero = LoopInstant(nanoseconds: 0)

    public static func seconds(_ seconds: some BinaryInteger) -> LoopInstant { zero + .seconds(seconds) }

    public static func milliseconds(_ milliseconds: some BinaryInteger) -> LoopInstant {
        zero + .milliseconds(milliseconds)
    }

    public static func microseconds(_ microseconds: some BinaryInteger) -> LoopInstant {
        zero + .microseconds(microseconds)
    }
}
