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
/// for the same reason. When it fires, `body` gets the timer: it steps the machine and schedules
/// the machine's next deadline.
///
/// ```swift
/// let timer = DeadlineTimer { timer in
///     machine.expire(now: EventLoop.now())
///     timer.schedule(at: machine.nextDeadline)
/// }
/// timer.schedule(at: machine.nextDeadline)   // after every step
/// ```
public final class DeadlineTimer: Sendable {
    private let timer: EventLoop.Timer
    /// The moment the timer is armed for, nil while it is not.
    private let armedAt: Mutex<LoopInstant?>

    /// `body` runs on the loop's thread at the scheduled moment.
    public init(loop: EventLoop = .shared, _ body: @escaping @Sendable (DeadlineTimer) -> Void) {
        let owner = BackReference<DeadlineTimer>()
        timer = loop.makeTimer {
            guard let deadlineTimer = owner.target else { return }
            deadlineTimer.armedAt.withLock { $0 = nil }
            body(deadlineTimer)
        }
        armedAt = Mutex(nil)
        owner.target = self
    }

    /// Makes sure the timer fires no later than `deadline` (one already past fires on the loop's
    /// next turn). Nil, or a deadline after the one armed, changes nothing. A machine's deadline
    /// that has not moved is the same moment on every call, so it never re-arms the timer (a
    /// delay from now would, by the nanoseconds between two clock readings).
    public func schedule(at deadline: LoopInstant?) {
        guard let deadline else { return }
        let earlier = armedAt.withLock { armed in
            guard armed.map({ deadline < $0 }) ?? true else { return false }
            armed = deadline
            return true
        }
        if earlier { timer.arm(at: deadline) }
    }

    /// `schedule(at:)` for a deadline `delay` from now (at once for a delay of zero or less).
    public func schedule(after delay: Duration?) {
        guard let delay else { return }
        schedule(at: EventLoop.now() + delay)
    }

    /// Disarms it: the machine has stopped.
    public func cancel() {
        armedAt.withLock { $0 = nil }
        timer.disarm()
    }
}
