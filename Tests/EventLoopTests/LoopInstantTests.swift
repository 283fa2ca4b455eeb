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

    @Test func theLoopsClockReadsIt() {
        let before = EventLoop.now()
        #expect(EventLoop.now() >= before, "monotonic")
    }
}
