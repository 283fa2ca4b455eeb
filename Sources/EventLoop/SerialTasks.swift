/// Async jobs run one after the other on the event loop: each starts once the one enqueued before
/// it has ended, so they end in the order they were enqueued even when a later one is shorter;
/// `idle()` returns once every job enqueued so far has ended.
///
/// Why: a consumer of the loop's events that must await (an HCI command, an output's line) does
/// that work off the event path, but in the order of the events that caused it. A task per job,
/// chained after the one before, not a queue with a task of its own that waits for jobs: nothing
/// runs while there is nothing to do, and a job's task is started when it is enqueued.
///
/// A value: its owner's isolation (an actor, a `LoopBound`) keeps `enqueue` serial.
public struct SerialTasks: Sendable {
    private let loop: EventLoop
    /// The job enqueued last; it ends after every job enqueued before it.
    private var last: Task<Void, Never>?

    public init(on loop: EventLoop = .shared) {
        self.loop = loop
    }

    /// Runs `job` on the loop once the jobs enqueued before it have ended.
    public mutating func enqueue(_ job: @escaping @Sendable () async -> Void) {
        let previous = last
        last = Task(executorPreference: loop) {
            await previous?.value
            await job()
        }
    }

    /// Returns once every job enqueued so far has ended.
    public func idle() async {
        await last?.value
    }
}
