import Dispatch
import Glibc
import LoopClock
import Synchronization
import Testing

@testable import EventLoop

/// An actor whose executor is the loop, as the event path's actors are.
private actor OnLoop {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }
    var calls = 0

    func onLoopThread() -> Bool { EventLoop.shared.inLoop }

    func count() { calls += 1 }

    func call(_ other: OnLoop) async -> Bool {
        calls += 1
        return await other.onLoopThread()
    }
}

/// Set when a `HeldByAHandler` is released.
private final class ReleaseFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .sequentiallyConsistent) }
    func set() { value.store(true, ordering: .sequentiallyConsistent) }
}

private final class HeldByAHandler: Sendable {
    let released: ReleaseFlag
    init(_ released: ReleaseFlag) { self.released = released }
    deinit { released.set() }
}

/// A pipe whose read end the tests watch.
private struct Pipe {
    let read: Int32
    let write: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0)
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        (read, write) = (ends[0], ends[1])
    }

    func send(_ byte: UInt8) {
        var byte = byte
        _ = Glibc.write(write, &byte, 1)
    }

    func close() {
        _ = Glibc.close(read)
        _ = Glibc.close(write)
    }
}

@Suite struct EventLoopTests {
    let loop = EventLoop.shared

    @Test func actorsOnTheLoopRunOnItsThreadAndCallEachOtherThere() async {
        let (first, second) = (OnLoop(), OnLoop())
        #expect(await first.onLoopThread())
        #expect(await first.call(second))
        #expect(!loop.inLoop)
    }

    /// Each loop knows its own thread, and only the shared loop's thread is where the event path's
    /// actors may run (`inSharedLoop`, which their `onLoop` checks).
    @Test func aThreadKnowsWhichLoopItRuns() {
        let other = EventLoop()
        #expect(!loop.inLoop && !other.inLoop && !EventLoop.inSharedLoop, "a test's thread runs no loop")
        let onShared = loop.runAndWait { [loop] in [loop.inLoop, other.inLoop, EventLoop.inSharedLoop] }
        #expect(onShared == [true, false, true])
        let onOther = other.runAndWait { [loop] in [loop.inLoop, other.inLoop, EventLoop.inSharedLoop] }
        #expect(onOther == [false, true, false])
    }

    @Test func taskExecutorPreferenceRunsNonisolatedCodeOnTheLoop() async {
        let onLoop = await withTaskExecutorPreference(loop) { loop.inLoop }
        #expect(onLoop)
    }

    @Test func executeRunsClosuresInOrderOnTheLoop() async {
        let order = Mutex<[Int]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for index in 0..<100 {
                loop.execute { [loop] in
                    precondition(loop.inLoop)
                    order.withLock { $0.append(index) }
                    if index == 99 { done.resume() }
                }
            }
        }
        #expect(order.withLock { $0 } == Array(0..<100))
    }

    /// From another thread: the body runs on the loop (the thread named for it), after what was
    /// queued before it, and its result or its error comes back to the waiting caller; on the
    /// loop's thread it runs at once.
    @Test func runAndWaitRunsOnTheLoopAndHandsBackTheResultOrTheError() {
        struct Refused: Error, Equatable {}
        let order = Mutex<[String]>([])
        loop.execute { order.withLock { $0.append("queued before") } }
        let name = loop.runAndWait { () -> String in
            guard let file = fopen("/proc/thread-self/comm", "r") else { return "unreadable" }
            defer { fclose(file) }
            var buffer = [CChar](repeating: 0, count: 32)
            guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
            let line = buffer.prefix { $0 != 0 && $0 != 0x0A }.map { UInt8(bitPattern: $0) }
            return String(decoding: line, as: UTF8.self)
        }
        #expect(name == EventLoop.threadName)
        let answer = loop.runAndWait { [loop] in
            order.withLock { $0.append("body") }
            // Nested, on the loop's thread: inline, or it would wait for itself.
            return loop.inLoop && loop.runAndWait { loop.inLoop }
        }
        #expect(answer)
        #expect(order.withLock { $0 } == ["queued before", "body"])
        #expect(throws: Refused()) { try loop.runAndWait { () throws(Refused) -> Int in throw Refused() } }
        // The body is the caller's non-escaping closure: the loop must let go of it before the
        // caller resumes, every time, or `withoutActuallyEscaping` traps (a race: hence many).
        var sum = 0
        for value in 1...1_000 { sum += loop.runAndWait { value } }
        #expect(sum == 500_500)
    }

    /// Work queued from other threads always wakes a sleeping loop. Four threads each hand a loop
    /// of their own 2,000 closures one at a time and wait for each to run: the loop goes back to
    /// sleep between them, so every one crosses the handshake between a queuing thread and a loop
    /// about to sleep. A lost wake-up leaves its closure waiting (here, for a second at most;
    /// another thread's wake-up may rescue it, so a rare race can go unseen, a loop that does not
    /// wake cannot).
    @Test func workQueuedFromOtherThreadsAlwaysWakesTheLoop() {
        let loop = EventLoop()
        let stalls = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            let ran = DispatchSemaphore(value: 0)
            for _ in 0..<2_000 {
                loop.execute { ran.signal() }
                guard ran.wait(timeout: .now() + 1) == .success else {
                    stalls.add(1, ordering: .relaxed)
                    return
                }
            }
        }
        #expect(stalls.load(ordering: .relaxed) == 0, "closures that waited for a wake-up that never came")
    }

    /// Work queued from the loop runs turn after turn without asking the kernel in between, but
    /// not for ever: a chain of closures that keeps queueing the next still lets a descriptor that
    /// became readable have its handler called within a few turns.
    @Test func queuedWorkThatQueuesMoreDoesNotStarveADescriptor() async {
        let pipe = Pipe()
        defer { pipe.close() }
        let chain = QueueingChain(loop: loop, pipe: pipe)
        let watch = loop.watch(pipe.read) { [chain] _ in
            var byte: UInt8 = 0
            while Glibc.read(pipe.read, &byte, 1) == 1 {}
            chain.handled.store(true, ordering: .sequentiallyConsistent)
        }
        let turns = await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            chain.start(done)
        }
        await onTheLoop { [loop] in loop.unwatch(watch) }
        let handled = chain.handled.load(ordering: .sequentiallyConsistent)
        #expect(handled)
        #expect(turns < 100, "the handler waited \(turns) turns of queued work")
    }

    @Test func aWatchedDescriptorCallsItsHandlerOnTheLoopUntilUnwatched() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self)
        let watch = loop.watch(pipe.read) { [loop] readiness in
            var byte: UInt8 = 0
            while Glibc.read(pipe.read, &byte, 1) == 1 {}
            continuation.yield(readiness.isReadable && !readiness.isFailure && loop.inLoop)
        }
        var iterator = stream.makeAsyncIterator()
        pipe.send(1)
        #expect(await iterator.next() == true)
        pipe.send(2)
        #expect(await iterator.next() == true)

        // Once unwatched on the loop, a readable descriptor calls nothing.
        await onTheLoop { [loop] in loop.unwatch(watch) }
        pipe.send(3)
        try await Task.sleep(for: .milliseconds(50))
        continuation.finish()
        #expect(await iterator.next() == nil)
    }

    /// A full socket's writer asks for writability and is called once the peer has read: what
    /// the MQTT connection needs when the broker is slower than the values.
    @Test func writabilityIsReportedOnlyWhileAskedFor() async throws {
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { _ = (Glibc.close(ends[0]), Glibc.close(ends[1])) }
        _ = fcntl(ends[0], F_SETFL, O_NONBLOCK)
        _ = fcntl(ends[1], F_SETFL, O_NONBLOCK)
        var chunk = [UInt8](repeating: 0, count: 4096)
        while Glibc.write(ends[0], &chunk, chunk.count) > 0 {}
        let writableCalls = Atomic<Int>(0)
        let watch = loop.watch(ends[0]) { readiness in
            if readiness.isWritable { writableCalls.add(1, ordering: .relaxed) }
        }

        // Not asked for: the peer making room calls nothing.
        while Glibc.read(ends[1], &chunk, chunk.count) > 0 {}
        try await Task.sleep(for: .milliseconds(50))
        #expect(writableCalls.load(ordering: .relaxed) == 0)

        while Glibc.write(ends[0], &chunk, chunk.count) > 0 {}
        await onTheLoop { [loop] in loop.watchWritability(watch, true) }
        while Glibc.read(ends[1], &chunk, chunk.count) > 0 {}
        let deadline = ContinuousClock.now + .seconds(5)
        while writableCalls.load(ordering: .relaxed) == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(writableCalls.load(ordering: .relaxed) > 0)
        await onTheLoop { [loop] in
            loop.watchWritability(watch, false)
            loop.unwatch(watch)
        }
    }

    @Test func aHangUpIsReportedAsAFailure() async {
        let pipe = Pipe()
        let (stream, continuation) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
        let watch = loop.watch(pipe.read) { readiness in continuation.yield(readiness.isFailure) }
        _ = Glibc.close(pipe.write)
        var iterator = stream.makeAsyncIterator()
        #expect(await iterator.next() == true)
        // Unwatched before it is closed, as `watch` asks: the number of a closed descriptor is
        // reused at once (by a test running beside this one), and a late unwatch would remove
        // that descriptor from the loop instead, whose owner would then wait forever.
        await onTheLoop { [loop] in loop.unwatch(watch) }
        _ = Glibc.close(pipe.read)
    }

    /// A descriptor closed before its unwatch leaves epoll with its file; when its number already
    /// names another watched file, the late unwatch must leave that watch alone.
    @Test func aLateUnwatchLeavesTheNextFileUnderTheSameNumberWatched() async throws {
        let first = Pipe()
        let stale = loop.watch(first.read) { _ in }
        let second = Pipe()
        // The first's read end closed and its number given to the second's read end in one step,
        // as the kernel reuses a closed number, with no moment for a test running beside this one
        // to take the number.
        let reused = first.read
        #expect(dup2(second.read, reused) == reused)
        _ = Glibc.close(second.read)
        let readable = Mutex(false)
        let watch = loop.watch(reused) { _ in
            var byte: UInt8 = 0
            while Glibc.read(reused, &byte, 1) == 1 {}
            readable.withLock { $0 = true }
        }
        await onTheLoop { [loop] in loop.unwatch(stale) }
        second.send(1)
        let deadline = ContinuousClock.now + .seconds(2)
        while !readable.withLock({ $0 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(readable.withLock { $0 }, "the watch of the file now under the number still works")
        await onTheLoop { [loop] in loop.unwatch(watch) }
        for descriptor in [reused, first.write, second.write] { _ = Glibc.close(descriptor) }
    }

    /// A handler may unwatch its own descriptor, and its watch may be the only owner of what the
    /// handler holds: the loop calls handlers without a reference of its own, so that stays alive
    /// until the handler returns, and is released once the wake-up's batch is done. (Built
    /// unoptimized, as `swift test` builds, the call itself holds the handler, so only an optimized
    /// build shows a release during the handler; the release after it shows in either.)
    @Test func aHandlerThatUnwatchesItselfKeepsWhatItHoldsUntilItReturns() async throws {
        let pipe = Pipe()
        defer { pipe.close() }
        let released = ReleaseFlag()
        let releasedDuringTheHandler = Mutex<Bool?>(nil)
        let watch = Mutex<EventLoop.Watch?>(nil)
        do {
            // Held by the handler alone.
            let held = HeldByAHandler(released)
            watch.withLock { [loop] in
                $0 = loop.watch(pipe.read) { [loop, held] _ in
                    var byte: UInt8 = 0
                    while Glibc.read(pipe.read, &byte, 1) == 1 {}
                    guard let own = watch.withLock({ $0 }) else { return }
                    loop.unwatch(own)
                    releasedDuringTheHandler.withLock { $0 = released.isSet }
                    withExtendedLifetime(held) {}
                }
            }
        }
        pipe.send(1)
        let deadline = ContinuousClock.now + .seconds(5)
        while !released.isSet, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(releasedDuringTheHandler.withLock { $0 } == false, "released while its handler still ran")
        #expect(released.isSet, "never released after its unwatch")
    }

    /// Two descriptors ready in one wake-up: the handler called first unwatches the other and
    /// watches a third, which takes the other's slot. The other's event, still in the batch,
    /// calls nothing: neither its handler nor the third's (its token is not the third's). On a
    /// loop of its own, so no other test's watch takes the slot first.
    @Test func anEventOfAWatchForgottenInItsBatchCallsNoWatchInItsPlace() throws {
        let own = EventLoop()
        let pipes = (first: Pipe(), second: Pipe(), third: Pipe())
        defer { for pipe in [pipes.first, pipes.second, pipes.third] { pipe.close() } }
        let calls = Mutex<[String]>([])
        let watches = Mutex<[String: EventLoop.Watch]>([:])
        @Sendable func handle(_ name: String, _ other: String, _ descriptor: Int32) {
            var byte: UInt8 = 0
            while Glibc.read(descriptor, &byte, 1) == 1 {}
            calls.withLock { $0.append(name) }
            guard let watch = watches.withLock({ $0.removeValue(forKey: other) }) else { return }
            own.unwatch(watch)
            let third = own.watch(pipes.third.read) { _ in calls.withLock { $0.append("third") } }
            watches.withLock { $0["third"] = third }
        }
        own.runAndWait {
            let first = own.watch(pipes.first.read) { _ in handle("first", "second", pipes.first.read) }
            let second = own.watch(pipes.second.read) { _ in handle("second", "first", pipes.second.read) }
            watches.withLock { $0 = ["first": first, "second": second] }
        }
        // Both made readable by one closure on the loop: its next `epoll_wait` reports both.
        own.runAndWait {
            pipes.first.send(1)
            pipes.second.send(1)
        }
        let deadline = ContinuousClock.now + .seconds(2)
        while calls.withLock({ $0.isEmpty }), ContinuousClock.now < deadline { usleep(1_000) }
        usleep(50_000)
        #expect(calls.withLock { $0.count } == 1, "called: \(calls.withLock { $0 })")
        own.runAndWait { for watch in watches.withLock({ $0.values }) { own.unwatch(watch) } }
    }

    /// `onLoop` (the event path's `assumeIsolated`) calls into an actor of the loop synchronously,
    /// from a closure the loop runs.
    @Test func onLoopCallsAnActorOfTheLoopSynchronously() async {
        let counter = OnLoop()
        let calls = await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            loop.execute {
                counter.onLoop { $0.count() }
                counter.onLoop { $0.count() }
                done.resume(returning: counter.onLoop { $0.calls })
            }
        }
        #expect(calls == 2)
    }

    /// Runs `body` on the loop's thread and waits for it.
    private func onTheLoop(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                body()
                done.resume()
            }
        }
    }

    @Test func aTimerFiresOnceAtItsDeadlineNeverEarly() async throws {
        let fired = Mutex<[LoopInstant]>([])
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let timer = loop.makeTimer { [loop] in
            precondition(loop.inLoop)
            fired.withLock { $0.append(EventLoop.now()) }
            continuation.yield()
        }
        let deadline = EventLoop.now() + .milliseconds(20)
        timer.arm(at: deadline)
        var iterator = stream.makeAsyncIterator()
        await iterator.next()
        try await Task.sleep(for: .milliseconds(50))
        let times = fired.withLock { $0 }
        #expect(times.count == 1)
        #expect(times[0] >= deadline)
    }

    @Test func reArmingMovesTheDeadlineAndDisarmingCancels() async throws {
        let fired = Mutex<[String]>([])
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let moved = loop.makeTimer {
            fired.withLock { $0.append("moved") }
            continuation.yield()
        }
        let cancelled = loop.makeTimer { fired.withLock { $0.append("cancelled") } }
        let start = EventLoop.now()
        moved.arm(at: start + .seconds(60))
        moved.arm(at: start + .milliseconds(10))
        cancelled.arm(at: start + .milliseconds(5))
        cancelled.disarm()
        var iterator = stream.makeAsyncIterator()
        await iterator.next()
        let elapsed = EventLoop.now() - start
        try await Task.sleep(for: .milliseconds(30))
        #expect(fired.withLock { $0 } == ["moved"])
        // Well before the first deadline (a minute), however loaded the machine.
        #expect(elapsed < .seconds(30))
    }

    @Test func aTimerBodyEntersAnActorOnTheLoopSynchronously() async {
        // What the host's command timer does: `assumeIsolated` holds on the loop's thread.
        let actor = OnLoop()
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let timer = loop.makeTimer {
            actor.assumeIsolated { $0.count() }
            continuation.yield()
        }
        timer.arm(after: .milliseconds(1))
        var iterator = stream.makeAsyncIterator()
        await iterator.next()
        #expect(await actor.calls == 1)
    }

    /// A timer that keeps arming itself at a deadline already past runs turn after turn, but a
    /// readable descriptor still has its handler called within a few turns: the loop polls
    /// between them as it does between queued jobs.
    @Test func aTimerThatKeepsFiringDoesNotStarveADescriptor() async {
        let pipe = Pipe()
        defer { pipe.close() }
        let counts = FiringCounts()
        let spinning = LoopBound<EventLoop.Timer?>(nil)
        let (handled, handledContinuation) = AsyncStream.makeStream(of: Void.self)
        let watch = loop.watch(pipe.read) { _ in
            var byte: UInt8 = 0
            while Glibc.read(pipe.read, &byte, 1) == 1 {}
            counts.handledAfter.store(counts.firings.load(ordering: .relaxed), ordering: .relaxed)
            spinning.value?.disarm()
            handledContinuation.yield()
        }
        await onTheLoop { [loop] in
            let timer = loop.makeTimer {
                // A starved descriptor: stop after a million firings and let the test fail.
                guard counts.firings.add(1, ordering: .relaxed).newValue < 1_000_000 else {
                    handledContinuation.yield()
                    return
                }
                spinning.value?.arm(at: LoopInstant(nanoseconds: 0))
            }
            spinning.value = timer
            timer.arm(at: LoopInstant(nanoseconds: 0))
            pipe.send(1)
        }
        var iterator = handled.makeAsyncIterator()
        await iterator.next()
        await onTheLoop { [loop] in
            spinning.value?.disarm()
            loop.unwatch(watch)
        }
        let firings = counts.handledAfter.load(ordering: .relaxed)
        #expect(firings >= 0 && firings < 100, "the handler waited \(firings) firings of the timer")
    }

    @Test func aPastDeadlineFiresOnTheNextTurn() async {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
        let timer = loop.makeTimer { continuation.yield() }
        timer.arm(at: LoopInstant(nanoseconds: 0))
        var iterator = stream.makeAsyncIterator()
        await iterator.next()
    }
}

/// How often a timer fired, and how often it had when a descriptor's handler ran.
private final class FiringCounts: Sendable {
    let firings = Atomic(0)
    let handledAfter = Atomic(-1)
}

/// Queues a closure that queues the next, until the watched pipe's handler has run (or a
/// million turns, a starved descriptor); the byte goes into the pipe once the chain is running.
private final class QueueingChain: @unchecked Sendable {
    let handled = Atomic(false)
    private let loop: EventLoop
    private let pipe: Pipe
    // Touched only on the loop's thread.
    private var turns = 0
    private var done: CheckedContinuation<Int, Never>?

    init(loop: EventLoop, pipe: Pipe) {
        self.loop = loop
        self.pipe = pipe
    }

    func start(_ done: CheckedContinuation<Int, Never>) {
        loop.execute { [self] in
            self.done = done
            pipe.send(1)
            step()
        }
    }

    private func step() {
        if handled.load(ordering: .sequentiallyConsistent) || turns >= 1_000_000 {
            done?.resume(returning: turns)
            done = nil
            return
        }
        turns += 1
        loop.execute { [self] in step() }
    }
}
