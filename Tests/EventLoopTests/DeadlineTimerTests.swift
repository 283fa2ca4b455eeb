import LoopClock
import Synchronization
import Testing

@testable import EventLoop

/// `DeadlineTimer`: the one driver of the state machines' deadlines. A deadline may come earlier,
/// never later than asked; a later one does not postpone an earlier arming; the body gets the
/// timer to schedule the machine's next deadline.
struct DeadlineTimerTests {
    /// A machine with a list of deadlines on the loop's clock: each firing expires the due ones
    /// and records when it ran.
    final class Machine: Sendable {
        let deadlines: Mutex<[LoopInstant]>
        let wakeUps = Mutex<[LoopInstant]>([])
        let expired = Mutex<[LoopInstant]>([])

        init(_ deadlines: [LoopInstant]) { self.deadlines = Mutex(deadlines) }

        var nextDeadline: LoopInstant? { deadlines.withLock { $0.min() } }

        func expire(now: LoopInstant) {
            wakeUps.withLock { $0.append(now) }
            let due = deadlines.withLock { deadlines in
                defer { deadlines.removeAll { $0 <= now } }
                // In time order: a wake-up late enough expires several at once.
                return deadlines.filter { $0 <= now }.sorted()
            }
            expired.withLock { $0 += due }
        }
    }

    /// Runs `machine` with a `DeadlineTimer` until every deadline has expired.
    static func drive(_ machine: Machine) async {
        let (done, finished) = AsyncStream.makeStream(of: Void.self)
        let timer = DeadlineTimer { timer in
            machine.expire(now: EventLoop.now())
            if let next = machine.nextDeadline { timer.schedule(at: next) } else { finished.yield() }
        }
        timer.schedule(at: machine.nextDeadline)
        var iterator = done.makeAsyncIterator()
        await iterator.next()
    }

    @Test func everyDeadlineExpiresInOrderAndNoneEarly() async {
        let start = EventLoop.now()
        let deadlines = [start + .milliseconds(30), start + .milliseconds(10), start + .milliseconds(20)]
        let machine = Machine(deadlines)
        await Self.drive(machine)
        #expect(machine.expired.withLock { $0 } == deadlines.sorted())
        // Never early: the first wake-up came at the earliest deadline or after, and a machine
        // late enough may expire two deadlines in one wake-up, never need more than three.
        let wakeUps = machine.wakeUps.withLock { $0 }
        #expect(wakeUps.first! >= deadlines.min()!)
        #expect(wakeUps.count <= 3)
    }

    @Test func aLaterDeadlineDoesNotPostponeAnEarlierArming() async {
        let start = EventLoop.now()
        let (fired, firedSink) = AsyncStream.makeStream(of: LoopInstant.self)
        let timer = DeadlineTimer { _ in firedSink.yield(EventLoop.now()) }
        timer.schedule(at: start + .milliseconds(10))
        // The machine's deadline moved a minute away; the armed moment stays.
        timer.schedule(at: start + .seconds(60))
        timer.schedule(at: nil)
        var iterator = fired.makeAsyncIterator()
        let firedAt = await iterator.next()!
        #expect(firedAt >= start + .milliseconds(10))
        #expect(firedAt < start + .seconds(30))
    }

    @Test func anEarlierDeadlineMovesTheArmingForward() async {
        let start = EventLoop.now()
        let (fired, firedSink) = AsyncStream.makeStream(of: LoopInstant.self)
        let timer = DeadlineTimer { _ in firedSink.yield(EventLoop.now()) }
        timer.schedule(at: start + .seconds(60))
        timer.schedule(after: .milliseconds(10))
        var iterator = fired.makeAsyncIterator()
        let firedAt = await iterator.next()!
        #expect(firedAt >= start + .milliseconds(10))
        #expect(firedAt < start + .seconds(30))
    }

    @Test func afterFiringTheTimerArmsAgainForALaterDeadline() async {
        // The armed moment is forgotten when the timer fires: a later deadline then arms it.
        let (fired, firedSink) = AsyncStream.makeStream(of: Int.self)
        let count = Mutex(0)
        let timer = DeadlineTimer { timer in
            let n = count.withLock { count in
                count += 1
                return count
            }
            firedSink.yield(n)
            if n == 1 { timer.schedule(after: .milliseconds(5)) }
        }
        timer.schedule(after: .milliseconds(1))
        var iterator = fired.makeAsyncIterator()
        #expect(await iterator.next() == 1)
        #expect(await iterator.next() == 2)
    }

    @Test func cancelDisarmsAndForgetsTheArming() async throws {
        let fired = Mutex<[String]>([])
        let (stream, sink) = AsyncStream.makeStream(of: Void.self)
        let cancelled = DeadlineTimer { _ in fired.withLock { $0.append("cancelled") } }
        cancelled.schedule(after: .milliseconds(5))
        cancelled.cancel()
        // Forgotten: a later deadline arms it again rather than being taken as already covered.
        let rearmed = DeadlineTimer { _ in
            fired.withLock { $0.append("rearmed") }
            sink.yield()
        }
        rearmed.schedule(after: .seconds(60))
        rearmed.cancel()
        rearmed.schedule(after: .milliseconds(20))
        var iterator = stream.makeAsyncIterator()
        await iterator.next()
        try await Task.sleep(for: .milliseconds(20))
        #expect(fired.withLock { $0 } == ["rearmed"])
    }

    /// The loop's timer holds its body and the body the timer's arming: the cycle ends with the
    /// `DeadlineTimer`, so an armed timer that is let go neither runs its body nor keeps it.
    @Test func aTimerLetGoNeitherFiresNorKeepsItsBody() async throws {
        final class Owner: Sendable {}
        let fired = Mutex(false)
        weak var owner: Owner?
        do {
            let captured = Owner()
            owner = captured
            let timer = DeadlineTimer { _ in
                _ = captured
                fired.withLock { $0 = true }
            }
            timer.schedule(after: .milliseconds(10))
        }
        // The body would have run by now; the disarm queued from this thread lets it go.
        try await Task.sleep(for: .milliseconds(50))
        #expect(!fired.withLock { $0 })
        // (TestHarness's `eventually`, written out: its moments would clash with this module's.)
        for _ in 0..<500 where owner != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(owner == nil)
    }
}
