import LoopClock
import Synchronization

/// The one way a state machine on the event path waits for its next deadline (`nextDeadline`,
/// `deadline`; answered by `expire(now:)`, `advance(to:)`, `step(now:)` and the like): a loop
/// timer, re-armed in place, never a task per deadline.
///
/// After each step of its machine the owner passes the machine's next deadline to `schedule`.
/// A timer already armed for an earlier moment stays as it is: waking before a deadline is
/// harmless (a machine expires only what is due, and its owner schedules what is left), while
/// moving the arming whenever a deadline moves (a fast line's values, a PDU per connection
/// event) would be work per event for nothing. No deadline leaves an armed timer to fire once,
/// for the same reason. When it fires, `body` gets the timer's `Arming`: it steps the machine and
/// schedules the machine's next deadline. Once the timer is released, its body does not run.
///
/// ```swift
/// let timer = DeadlineTimer { timer in
///     machine.expire(now: EventLoop.now())
///     timer.schedule(at: machine.nextDeadline)
/// }
/// timer.schedule(at: machine.nextDeadline)   // after every step
/// ```
public final class DeadlineTimer: Sendable {
    private let arming: Arming

    /// `body` runs on the loop's thread at the scheduled moment.
    public init(loop: EventLoop = .shared, _ body: @escaping @Sendable (Arming) -> Void) {
        let arming = Arming()
        // The loop's timer holds its body, and so the arming, strongly: the arming holds the timer
        // until this object goes (`deinit`), which breaks that cycle. Not a weak reference back to
        // this object: that would give it a side table, and every retain and release of it would
        // take the runtime's slow path (docs/performance.md).
        arming.attach(
            loop.makeTimer {
                guard arming.fire() else { return }
                body(arming)
            })
        self.arming = arming
    }

    deinit { arming.detach() }

    /// Makes sure the timer fires no later than `deadline` (one already past fires on the loop's
    /// next turn). Nil, or a deadline after the one armed, changes nothing. A machine's deadline
    /// that has not moved is the same moment on every call, so it never re-arms the timer (a
    /// delay from now would, by the nanoseconds between two clock readings).
    public func schedule(at deadline: LoopInstant?) { arming.schedule(at: deadline) }

    /// `schedule(at:)` for a deadline `delay` from now (at once for a delay of zero or less).
    public func schedule(after delay: Duration?) { arming.schedule(after: delay) }

    /// Disarms it: the machine has stopped.
    public func cancel() { arming.cancel() }

    /// The timer's arming: what its body is given to schedule the next deadline with, and what
    /// its `DeadlineTimer` forwards to.
    public final class Arming: Sendable {
        private struct State {
            /// The loop's timer; nil once the `DeadlineTimer` has gone.
            var timer: EventLoop.Timer?
            /// The moment the timer is armed for, nil while it is not.
            var armedAt: LoopInstant?
        }
        private let state = Mutex(State())

        fileprivate init() {}

        fileprivate func attach(_ timer: EventLoop.Timer) { state.withLock { $0.timer = timer } }

        /// Disarms the loop's timer and lets it go, and with it its body.
        fileprivate func detach() {
            let timer = state.withLock { state in
                state.armedAt = nil
                return state.timer.take()
            }
            timer?.disarm()
        }

        /// The timer fired: forgets the armed moment; false once the `DeadlineTimer` has gone.
        fileprivate func fire() -> Bool {
            state.withLock { state in
                state.armedAt = nil
                return state.timer != nil
            }
        }

        /// `DeadlineTimer.schedule(at:)`.
        public func schedule(at deadline: LoopInstant?) {
            guard let deadline else { return }
            let timer = state.withLock { state -> EventLoop.Timer? in
                guard state.armedAt.map({ deadline < $0 }) ?? true else { return nil }
                state.armedAt = deadline
                return state.timer
            }
            timer?.arm(at: deadline)
        }

        /// `DeadlineTimer.schedule(after:)`.
        public func schedule(after delay: Duration?) {
            guard let delay else { return }
            schedule(at: EventLoop.now() + delay)
        }

        /// `DeadlineTimer.cancel()`.
        public func cancel() {
            let timer = state.withLock { state in
                state.armedAt = nil
                return state.timer
            }
            timer?.disarm()
        }
    }
}
