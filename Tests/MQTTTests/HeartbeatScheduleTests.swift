import EventLoop
import Foundation
import LoopClock
import Synchronization
import Testing

@testable import MQTTService

/// `HeartbeatSchedule`: fires on the event loop when the next check is due, not before, and never
/// once stopped or without a check.
@Suite struct HeartbeatScheduleTests {
    final class Firings: Sendable {
        let times = Mutex<[ContinuousClock.Instant]>([])
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        func fire() {
            times.withLock { $0.append(.now) }
            continuation.yield()
        }
    }

    @Test(.timeLimit(.minutes(1))) func firesWhenTheCheckIsDue() async {
        let firings = Firings()
        var schedule = HeartbeatSchedule()
        schedule.start { firings.fire() }
        let start = ContinuousClock.now
        schedule.schedule(EventLoop.now() + .milliseconds(200))
        var iterator = firings.stream.makeAsyncIterator()
        await iterator.next()
        #expect(ContinuousClock.now - start >= .milliseconds(190))
        schedule.stop()
    }

    @Test func neverFiresWithoutACheckOrOnceStopped() async throws {
        let firings = Firings()
        var schedule = HeartbeatSchedule()
        #expect(!schedule.isRunning)
        schedule.start { firings.fire() }
        #expect(schedule.isRunning)
        schedule.schedule(nil)
        schedule.schedule(EventLoop.now() + .milliseconds(50))
        schedule.stop()
        #expect(!schedule.isRunning)
        schedule.schedule(EventLoop.now())
        try await Task.sleep(for: .milliseconds(300))
        #expect(firings.times.withLock { $0.isEmpty })
    }
}
