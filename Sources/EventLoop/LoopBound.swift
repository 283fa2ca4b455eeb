/// State that only the event loop's thread touches, shared with no lock: a `Sendable` box whose
/// `value` traps when read or changed on any other thread.
///
/// Why: a class whose state the loop alone uses (a store the GATT server's handlers and the
/// pipeline reach, both on the loop) would otherwise need a lock it never contends, or an
/// `@unchecked Sendable` that nothing checks. Here the one unchecked conformance is this box,
/// and every access checks its thread.
///
/// The check stays in release builds, as `onLoop`'s does: it is a thread-identity read and a
/// compare, cheaper than the uncontended lock it replaces (two atomic operations), and a caller
/// off the loop then stops at once with a message instead of racing on the state silently.
///
/// The accessors are inlinable, so a caller's `value` (read in place through `_read`, changed in
/// place through `_modify`) is specialized for its `Value` and allocates nothing.
public final class LoopBound<Value>: @unchecked Sendable {
    @usableFromInline let loop: EventLoop
    @usableFromInline var storage: Value

    /// Any thread may create it: `sending` means the caller keeps no other reference to `value`.
    public init(_ value: sending Value, on loop: EventLoop = .shared) {
        self.loop = loop
        storage = value
    }

    /// The state; only on `loop`'s thread.
    @inlinable
    public var value: Value {
        _read {
            precondition(loop.inLoop, "loop-bound state touched off the event loop")
            yield storage
        }
        _modify {
            precondition(loop.inLoop, "loop-bound state touched off the event loop")
            yield &storage
        }
    }
}
