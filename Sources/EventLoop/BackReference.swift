/// A weak reference to an object from the closures it hands out while it is being made (a
/// loop timer's body, a line's readable callback): they exist before the object is complete, so
/// they reach it through this, set at the end of its `init`. Weak, so they keep no stopped object
/// alive; the one way the project writes that back-reference to a `Sendable` object (to one that
/// is not, used only on the loop: `WeakReference` in a `LoopBound`, below). Off the event path
/// only: a weakly referenced object takes the runtime's slow path on every retain and release, so
/// what the event path retains is reached strongly until its owner stops (CONTRIBUTING.md).
public final class BackReference<Target: AnyObject & Sendable>: @unchecked Sendable {
    /// Set once, by the object's `init`, before anything that reads it can run: arming the timer
    /// or watching the line comes after and goes through the loop's lock, which orders the write
    /// before every read.
    public weak var target: Target?

    public init() {}
}

/// A weak reference as a value, for the back-reference to an object that is not `Sendable` but
/// used only on the loop (a component of an actor on the loop, its timer's body reaching it):
/// kept in a `LoopBound`, so that the body, which must be `Sendable`, reaches it through a check
/// that it runs on the loop's thread instead of an unchecked capture.
///
/// ```swift
/// let owner = LoopBound(WeakReference<Component>())
/// owner.value.target = self   // on the loop
/// timer = DeadlineTimer { _ in owner.value.target?.deadlineReached() }
/// ```
public struct WeakReference<Target: AnyObject> {
    public weak var target: Target?

    public init() {}
}
