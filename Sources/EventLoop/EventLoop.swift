import CEpoll
import CLoopThread
import Dispatch
import Glibc
import LoopClock
import Synchronization

/// The process's one event loop: a thread blocked in `epoll_wait` that owns the descriptors that
/// carry events (the HCI transport, GPIO line requests), the timers, and the Swift jobs of every
/// actor and task that prefers it.
///
/// Why: a value crossing from a reader thread to an actor on the cooperative pool, then to other
/// actors, wakes a thread at every crossing; on a Pi-class CPU those wake-ups are most of the cost
/// of an event. Here a readable descriptor's handler, the actors it feeds (their executor is this
/// loop, so calling one from another runs inline) and the write that answers all run on one thread
/// in one wake-up. Swift concurrency stays the programming model: this type is a `SerialExecutor`
/// (for actors, `unownedExecutor`) and a `TaskExecutor` (for `withTaskExecutorPreference`).
///
/// Threads other than the loop's may enqueue jobs, watch and unwatch descriptors and arm timers;
/// descriptor handlers and timer bodies always run on the loop's thread, one at a time, in the
/// actors' isolation domain (`assumeIsolated`, and its allocation-free form `onLoop`, hold there).
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    /// The process's loop, started on first use. Every actor on the event path uses it.
    public static let shared = EventLoop(isShared: true)

    /// What a watched descriptor reported.
    public struct Readiness: Sendable {
        public let rawValue: UInt32
        public var isReadable: Bool { rawValue & EPOLLIN.rawValue != 0 }
        /// Only reported while asked for (`watchWritability`).
        public var isWritable: Bool { rawValue & EPOLLOUT.rawValue != 0 }
        /// An error or hang-up: reported whether or not it was asked for (an HCI user channel whose
        /// adapter went away reports only this).
        public var isFailure: Bool { rawValue & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 }
    }

    // What other threads hand the loop, guarded by `lock`: plain stored state and an explicit
    // lock rather than a closure-taking mutex, so taking it allocates nothing. The loop's turn
    // takes it only when `queued` says there is something to take: most turns a descriptor woke
    // and nothing was queued.
    private let lock = Lock()
    private nonisolated(unsafe) var jobs: [UnownedJob] = []
    private nonisolated(unsafe) var closures: [@Sendable () -> Void] = []
    /// Watchers added since the loop last took them into `watcherSlots`.
    private nonisolated(unsafe) var addedWatchers: [WatcherEntry] = []
    private nonisolated(unsafe) var nextToken: UInt64 = 1
    /// Slots of `watcherSlots` given out (`watch`) and given back (the loop forgetting a watcher).
    private nonisolated(unsafe) var watcherSlotsGivenOut = 0
    private nonisolated(unsafe) var freeWatcherSlots: [Int] = []
    /// Set (under `lock`) with every job or closure queued; cleared by the loop as it takes them.
    private let queued = Atomic<Bool>(false)
    /// The loop is in (or about to enter) `epoll_wait` and needs the eventfd to wake. With
    /// `queued`, sequentially consistent: the loop sets this, then reads `queued`; a queuing
    /// thread sets `queued`, then takes this. One of them sees the other's write, so a queued job
    /// either stops the loop from sleeping or wakes it.
    private let waiting = Atomic<Bool>(false)

    // The loop thread's own, touched nowhere else (other threads reach them through `execute`).
    /// The watchers by slot: a watch's token names its slot in its low bits (`slotOf`), so a
    /// readable descriptor's watcher is found without a search (a list searched by token cost
    /// about 35 instructions at every wake-up, the event path's descriptors being watched
    /// last) or a hash. The rest of the token is unique to the watch: a token left over from a
    /// watcher forgotten, its slot given to another since, finds no watcher. Boxed: a closure
    /// kept directly in a collection comes back out through a re-abstraction thunk, allocated at
    /// every lookup.
    private nonisolated(unsafe) var watcherSlots: [WatcherEntry?] = []
    /// The handlers of a wake-up's batch run with no reference of the loop's own to their
    /// watchers (taking and dropping one cost four reference counts per readable descriptor): a
    /// watcher forgotten meanwhile, by its own handler or another, is kept here until the batch
    /// is done.
    private nonisolated(unsafe) var watchersForgottenWhileDispatching: [Watcher] = []
    private nonisolated(unsafe) var dispatching = false
    /// Armed timers; few (one per sensor and state machine), so a list.
    private nonisolated(unsafe) var timers: [ArmedTimer] = []

    private struct ArmedTimer {
        let token: UInt64
        var deadline: UInt64
        let body: @Sendable () -> Void
    }

    private let epoll: Int32
    private let wakeDescriptor: Int32
    private static let wakeToken: UInt64 = 0
    /// The loop thread's name, as `top -H`, `ps -L` and a crash's backtrace show it.
    public static let threadName = "gattway-loop"

    /// How many turns of queued jobs may run before the descriptors are polled.
    private static let turnsBetweenPolls = 8

    /// Whether this is `shared`, which its thread records for `inSharedLoop`.
    private let isShared: Bool

    /// Internal, not private: a test stalls a loop of its own, not the one every test shares.
    convenience init() { self.init(isShared: false) }

    private init(isShared: Bool) {
        self.isShared = isShared
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        wakeDescriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(epoll >= 0 && wakeDescriptor >= 0, "the event loop cannot start: \(String(cString: strerror(errno)))")
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: Self.wakeToken))
        epoll_ctl(epoll, EPOLL_CTL_ADD, wakeDescriptor, &event)
        let unmanaged = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let started = pthread_create(
            &thread, nil,
            { context in
                let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
                gw_set_current_loop(context, loop.isShared)
                // Else it carries the name of whichever thread started it (a dispatch worker's).
                nameThisThread(EventLoop.threadName)
                loop.run()
                return nil
            }, unmanaged.toOpaque())
        precondition(started == 0, "the event loop's thread cannot start")
    }

    /// After queuing (`queued` set): wakes the loop if it sleeps, only the first caller doing so.
    private func wakeIfWaiting() {
        if waiting.exchange(false, ordering: .sequentiallyConsistent) { signal() }
    }

    private func newTokenLocked() -> UInt64 {
        defer { nextToken += 1 }
        return nextToken
    }

    /// A watch's token: a new token's bits above a free slot's. Never `wakeToken` (0): the new
    /// token is at least 1.
    private func newWatchTokenLocked() -> UInt64 {
        let slot: Int
        if let free = freeWatcherSlots.popLast() {
            slot = free
        } else {
            slot = watcherSlotsGivenOut
            watcherSlotsGivenOut += 1
            precondition(slot <= Self.slotMask, "more than \(Self.slotMask + 1) descriptors watched")
        }
        return newTokenLocked() << Self.slotBits | UInt64(slot)
    }

    private static let slotBits: UInt64 = 16
    private static let slotMask = Int(1 << slotBits - 1)
    private static func slotOf(_ token: UInt64) -> Int { Int(truncatingIfNeeded: token) & slotMask }

    /// Whether the caller runs on the loop's thread.
    public var inLoop: Bool { gw_current_loop() == UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque()) }

    /// `shared.inLoop`, without reaching `shared` (a lazy global, initialised once: each use
    /// asks whether it is).
    public static var inSharedLoop: Bool { gw_runs_shared_loop() }

    // MARK: Executor

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        lock.lock()
        jobs.append(unowned)
        queued.store(true, ordering: .sequentiallyConsistent)
        lock.unlock()
        wakeIfWaiting()
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        precondition(inLoop, "expected to run on gattway's event loop")
    }

    /// Runs `body` on the loop's thread, after the work already queued.
    public func execute(_ body: @escaping @Sendable () -> Void) {
        lock.lock()
        closures.append(body)
        queued.store(true, ordering: .sequentiallyConsistent)
        lock.unlock()
        wakeIfWaiting()
    }

    /// Runs `body` on the loop's thread and returns what it returns: at once when called there,
    /// else queued after the work already queued, the calling thread waiting until it has run.
    /// For callers that are not on the loop (tests, a thread of a library) and need an answer
    /// or a release done before they go on; never from a task on the cooperative pool, which
    /// must not block.
    public func runAndWait<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        if inLoop { return try body() }
        return try withoutActuallyEscaping(body) { body throws(Failure) in
            let call = BlockingCall(body)
            execute { call.run() }
            return try call.result()
        }
    }

    // MARK: Descriptors

    /// Calls `handler` on the loop's thread whenever `descriptor` is readable (or fails). The
    /// descriptor stays the caller's; `unwatch` before closing it, from the loop's thread (a
    /// handler already taken for a wake-up on another thread could otherwise still run).
    public func watch(_ descriptor: Int32, handler: @escaping @Sendable (Readiness) -> Void) -> Watch {
        // Added before epoll can report the descriptor: the loop looks among the added watchers
        // for a token it does not know (`watcher(for:)`).
        lock.lock()
        let token = newWatchTokenLocked()
        addedWatchers.append(WatcherEntry(token: token, watcher: Watcher(handler: handler)))
        lock.unlock()
        var event = epoll_event(events: EPOLLIN.rawValue, data: epoll_data_t(u64: token))
        let result = epoll_ctl(epoll, EPOLL_CTL_ADD, descriptor, &event)
        precondition(result == 0, "watching descriptor \(descriptor) failed: \(String(cString: strerror(errno)))")
        return Watch(descriptor: descriptor, token: token, file: Self.identity(of: descriptor))
    }

    /// Stops watching; no handler of this watch runs after it returns on the loop's thread (from
    /// another, the watcher is forgotten on the loop's next turn).
    ///
    /// A descriptor closed before its unwatch (against `watch`'s rule) has left epoll with its
    /// file, and its number may already name another watched file: that one is left alone, where
    /// removing it would silence its owner for good.
    public func unwatch(_ watch: Watch) {
        if Self.identity(of: watch.descriptor) == watch.file {
            var event = epoll_event()
            _ = epoll_ctl(epoll, EPOLL_CTL_DEL, watch.descriptor, &event)
        }
        guard inLoop else { return execute { [self] in forget(watch.token) } }
        forget(watch.token)
    }

    /// On the loop: removes the watcher of `token`, added or not yet taken in, and gives its
    /// slot back.
    private func forget(_ token: UInt64) {
        takeAddedWatchers()
        // Held strongly before its slot lets it go.
        guard let watcher = takenWatcher(for: token)?.takeUnretainedValue() else { return }
        let slot = Self.slotOf(token)
        watcherSlots[slot] = nil
        lock.lock()
        freeWatcherSlots.append(slot)
        lock.unlock()
        if dispatching { watchersForgottenWhileDispatching.append(watcher) }
    }

    /// On the loop: puts the watchers other threads added into their slots.
    private func takeAddedWatchers() {
        lock.lock()
        for entry in addedWatchers {
            let slot = Self.slotOf(entry.token)
            while watcherSlots.count <= slot { watcherSlots.append(nil) }
            watcherSlots[slot] = entry
        }
        addedWatchers.removeAll()
        lock.unlock()
    }

    /// On the loop: the watcher of `token`; nil once unwatched (epoll may still report a
    /// descriptor in the batch that a handler before it unwatched).
    /// Unretained: alive while the batch is dispatched (`watchersForgottenWhileDispatching`).
    private func watcher(for token: UInt64) -> Unmanaged<Watcher>? {
        if let watcher = takenWatcher(for: token) { return watcher }
        takeAddedWatchers()
        return takenWatcher(for: token)
    }

    /// The watcher of `token` among those the loop has taken in.
    private func takenWatcher(for token: UInt64) -> Unmanaged<Watcher>? {
        let slot = Self.slotOf(token)
        guard slot < watcherSlots.count, let entry = watcherSlots[slot], entry.token == token else { return nil }
        return .passUnretained(entry.watcher)
    }

    /// Whether `watch`'s handler is called when its descriptor is writable too, for a writer
    /// whose socket was full until it has room again. From the loop's thread.
    public func watchWritability(_ watch: Watch, _ wanted: Bool) {
        let events = EPOLLIN.rawValue | (wanted ? EPOLLOUT.rawValue : 0)
        var event = epoll_event(events: events, data: epoll_data_t(u64: watch.token))
        let result = epoll_ctl(epoll, EPOLL_CTL_MOD, watch.descriptor, &event)
        precondition(result == 0, "watching descriptor \(watch.descriptor) failed: \(String(cString: strerror(errno)))")
    }

    private final class Watcher: Sendable {
        let handler: @Sendable (Readiness) -> Void
        init(handler: @escaping @Sendable (Readiness) -> Void) { self.handler = handler }
    }

    private struct WatcherEntry {
        let token: UInt64
        let watcher: Watcher
    }

    /// A watched descriptor.
    public struct Watch: Sendable {
        public let descriptor: Int32
        let token: UInt64
        /// The file it named when watched (device and inode).
        let file: FileIdentity?
    }

    struct FileIdentity: Equatable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    private static func identity(of descriptor: Int32) -> FileIdentity? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    // MARK: Timers

    /// A timer whose body runs on the loop's thread at its deadline; re-armed or disarmed any
    /// number of times, from any thread, without allocating a task per deadline.
    public func makeTimer(_ body: @escaping @Sendable () -> Void) -> Timer {
        lock.lock()
        defer { lock.unlock() }
        return Timer(loop: self, body: body, token: newTokenLocked())
    }

    public final class Timer: Sendable {
        private let loop: EventLoop
        private let body: @Sendable () -> Void
        private let token: UInt64

        fileprivate init(loop: EventLoop, body: @escaping @Sendable () -> Void, token: UInt64) {
            self.loop = loop
            self.body = body
            self.token = token
        }

        deinit { disarm() }

        /// Fires once at `deadline`, replacing any earlier arming. A deadline already past fires
        /// on the loop's next turn.
        public func arm(at deadline: LoopInstant) {
            loop.arm(token, at: deadline.nanoseconds, body)
        }

        /// Fires once when `delay` has passed (at once for a delay of zero or less).
        public func arm(after delay: Duration) {
            arm(at: EventLoop.now() + delay)
        }

        public func disarm() {
            loop.disarm(token)
        }
    }

    /// The loop's own timers change on the loop; another thread's arming is queued to it (a
    /// closure allocated then, off the event path).
    private func arm(_ token: UInt64, at deadline: UInt64, _ body: @escaping @Sendable () -> Void) {
        guard inLoop else { return execute { [self] in arm(token, at: deadline, body) } }
        if let index = timers.firstIndex(where: { $0.token == token }) {
            timers[index].deadline = deadline
        } else {
            timers.append(ArmedTimer(token: token, deadline: deadline, body: body))
        }
    }

    private func disarm(_ token: UInt64) {
        guard inLoop else { return execute { [self] in disarm(token) } }
        timers.removeAll { $0.token == token }
    }

    /// Now on the loop's clock (CLOCK_MONOTONIC): the clock of every deadline and timer, and of
    /// the kernel's GPIO events.
    public static func now() -> LoopInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return LoopInstant(nanoseconds: UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec))
    }

    // MARK: The loop

    private func signal() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        let serial = asUnownedSerialExecutor()
        let task = asUnownedTaskExecutor()
        // Swapped with the queues under the lock, so taking a batch allocates nothing.
        var batch: [UnownedJob] = []
        var batchClosures: [@Sendable () -> Void] = []
        var due: [@Sendable () -> Void] = []
        var turnsWithoutPolling = 0
        while true {
            // The jobs and closures queued so far, then the timers that are due, until none is left.
            if queued.load(ordering: .relaxed) {
                lock.lock()
                queued.store(false, ordering: .relaxed)
                swap(&batch, &jobs)
                swap(&batchClosures, &closures)
                lock.unlock()
                if !batch.isEmpty {
                    for job in batch { job.runSynchronously(isolatedTo: serial, taskExecutor: task) }
                    batch.removeAllKeepingStorage()
                }
                if !batchClosures.isEmpty {
                    for closure in batchClosures { closure() }
                    batchClosures.removeAllKeepingStorage()
                }
            }

            var next = UInt64.max
            // The clock is read only when a timer may be due: most turns have none armed.
            let now = timers.isEmpty ? 0 : Self.now().nanoseconds
            var index = 0
            while index < timers.count {
                if timers[index].deadline <= now {
                    due.append(timers.remove(at: index).body)
                } else {
                    next = min(next, timers[index].deadline)
                    index += 1
                }
            }
            let timersFired = !due.isEmpty
            if timersFired {
                for body in due { body() }
                due.removeAllKeepingStorage()
            }
            // Jobs the last turn queued (a task resumed by a descriptor's handler, typically) and
            // timers that fired (which may have armed others, due already) are looked at again
            // without asking the kernel first: an `epoll_wait` that finds nothing is a system call
            // per hop, several per event. The descriptors are still polled every few turns, so a
            // chain of jobs that keeps queueing more, or a timer that keeps arming itself in the
            // past, cannot keep their events waiting.
            var busy = timersFired || queued.load(ordering: .relaxed)
            if busy && turnsWithoutPolling < Self.turnsBetweenPolls {
                turnsWithoutPolling += 1
                continue
            }
            turnsWithoutPolling = 0
            let sleeps = !busy
            if sleeps {
                waiting.store(true, ordering: .sequentiallyConsistent)
                busy = queued.load(ordering: .sequentiallyConsistent)
            }
            // Rounded up to the millisecond epoll_wait counts in: a timer is never early.
            let timeout = busy ? 0 : next == .max ? -1 : Int32(clamping: (next - now + 999_999) / 1_000_000)
            let count = SystemCall.epollWait(epoll, &events, Int32(events.count), timeout)
            // Awake again: a thread that queues while the handlers below run need not signal
            // (one that took `waiting` just before this did: a spare wake-up, rare).
            if sleeps { waiting.store(false, ordering: .relaxed) }
            // By index: a prefix of the array is a slice that retains it.
            dispatching = true
            for index in 0..<Int(max(count, 0)) {
                let token = events[index].data.u64
                if token == Self.wakeToken {
                    var value: UInt64 = 0
                    _ = read(wakeDescriptor, &value, 8)
                    continue
                }
                let readiness = Readiness(rawValue: events[index].events)
                watcher(for: token)?._withUnsafeGuaranteedRef { $0.handler(readiness) }
            }
            dispatching = false
            // Checked first: most batches forget nothing, and calling it at every wake-up measured
            // about 20 instructions per event.
            if !watchersForgottenWhileDispatching.isEmpty { watchersForgottenWhileDispatching.removeAllKeepingStorage() }
        }
    }
}

/// A pthread mutex, locked and unlocked explicitly (no closure per use).
private final class Lock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

}

/// Names the calling thread, as `top -H`, `ps -L` and a crash's backtrace show it (the kernel
/// keeps 15 bytes). A thread left unnamed carries the name of the one that started it.
public func nameThisThread(_ name: String) {
    _ = gw_name_this_thread(name)
}

/// A call `runAndWait` hands to the loop for a caller on another thread, who waits for it.
private final class BlockingCall<Result, Failure: Error>: @unchecked Sendable {
    // @unchecked: `body` runs once, on the loop, and `outcome` is written there before `done` is
    // signalled; the caller reads it after.
    private var body: (() throws(Failure) -> Result)?
    private var outcome: Swift.Result<Result, Failure>?
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping () throws(Failure) -> Result) { self.body = body }

    /// Releases `body` before the caller resumes: it is the caller's non-escaping closure, and
    /// `withoutActuallyEscaping` traps if anything still holds it then.
    func run() {
        do throws(Failure) {
            outcome = .success(try body!())
        } catch {
            outcome = .failure(error)
        }
        body = nil
        done.signal()
    }

    func result() throws(Failure) -> Result {
        done.wait()
        return try outcome!.get()
    }
}

extension Actor {
    /// `assumeIsolated` for the event path: for an actor whose executor is `EventLoop.shared`,
    /// called on the loop's thread (a descriptor handler, a timer body, or another such actor).
    ///
    /// Why not the standard library's: its closure is re-abstracted through a heap context on
    /// every call (so is any non-escaping closure passed through `withoutActuallyEscaping`), an
    /// allocation per event on a path that makes several calls per event. Here `operation` is an
    /// escaping closure that captures nothing (what it needs comes in as `argument`): a plain
    /// function pointer with no context, called directly. A closure that captures would allocate
    /// its context on every call, which is what this exists to avoid.
    @inlinable @inline(__always)
    public nonisolated func onLoop<Argument, Result, Failure: Error>(
        with argument: Argument, _ operation: @escaping (isolated Self, Argument) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        precondition(EventLoop.inSharedLoop, "an event-loop actor was called off the event loop")
        return try unsafeBitCast(operation, to: ((Self, Argument) throws(Failure) -> Result).self)(self, argument)
    }

    /// `onLoop(with:_:)` for an operation that needs nothing but the actor.
    @inlinable @inline(__always)
    public nonisolated func onLoop<Result, Failure: Error>(
        _ operation: @escaping (isolated Self) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        precondition(EventLoop.inSharedLoop, "an event-loop actor was called off the event loop")
        return try unsafeBitCast(operation, to: ((Self) throws(Failure) -> Result).self)(self)
    }
}
