import LoopClock
import Testing

@testable import EventLoop

/// `LoopInstant`: a moment on the loop's clock with `Duration` arithmetic, clamped to the clock's
/// range rather than trapping, so a deadline far away or already past is still a moment.
@Suite struct LoopInstantTests {
    let start = LoopInstant(nanoseconds: 5_000_000_000)

    @Test func durationsMoveItBothWays() {
        #expect(start + .milliseconds(1500) == LoopInstant(nanoseconds: 6_500_000_000))
        #expect(start - .seconds(2) == LoopInstant(nanoseconds: 3_000_000_000))
        #expect(start + (.zero - .nanoseconds(1)) == LoopInstant(nanoseconds: 4_999_999_999))
        var moved = start
        moved += .microseconds(3)
        #expect(moved == LoopInstant(nanoseconds: 5_000_003_000))
    }

    /// Durations whose attoseconds take more than 64 bits (from about 9.2 s on) move it as
    /// exactly as shorter ones, both ways.
    @Test func longDurationsMoveItExactly() {
        #expect(start + .nanoseconds(9_223_372_036) == LoopInstant(nanoseconds: 14_223_372_036), "just within 64 bits")
        #expect(start + .nanoseconds(9_223_372_037) == LoopInstant(nanoseconds: 14_223_372_037), "just beyond")
        #expect(start + .seconds(20) == LoopInstant(nanoseconds: 25_000_000_000))
        #expect(LoopInstant(nanoseconds: 30_000_000_000) - .milliseconds(20_500) == LoopInstant(nanoseconds: 9_500_000_000))
        #expect(Duration.seconds(3600).nanoseconds == 3_600_000_000_000)
    }

    @Test func theTimeBetweenTwoIsSigned() {
        let later = start + .milliseconds(250)
        #expect(later - start == .milliseconds(250))
        #expect(start - later == .zero - .milliseconds(250))
        #expect(start < later)
    }

    @Test func itClampsAtTheClocksEnds() {
        #expect(start - .seconds(10) == LoopInstant(nanoseconds: 0), "not before the clock's origin")
        #expect(start + .seconds(Int64.max) == LoopInstant(nanoseconds: .max), "a deadline that never comes")
        #expect(LoopInstant(nanoseconds: .max) + .nanoseconds(1) == LoopInstant(nanoseconds: .max))
    }

    /// A duration in the clock's unit: none below zero, and one beyond the clock's range clamped
    /// rather than trapping.
    @Test func aDurationsNanosecondsAreClampedToTheClocksRange() {
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
        #expect(Duration.nanoseconds(7).nanoseconds == 7)
        #expect((Duration.zero - .seconds(3)).nanoseconds == 0)
        #expect(Duration.seconds(Int64.max).nanoseconds == UInt64(Int64.max))
    }

    @Test func theLoopsClockReadsIt() {
        let before = EventLoop.now()
        #expect(EventLoop.now() >= before, "monotonic")
    }
}
