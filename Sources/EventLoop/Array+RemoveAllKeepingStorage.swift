extension Array {
    /// Removes every element and keeps the storage, for the arrays the event path reuses from one
    /// event to the next: the few elements of one event are popped, where
    /// `removeAll(keepingCapacity: true)` goes through `replaceSubrange`, about a hundred
    /// instructions however few there are. More than a few (a burst) go through it after all,
    /// which costs less than popping each. Inlinable, so it is specialized where it is used.
    @inlinable
    public mutating func removeAllKeepingStorage() {
        guard count <= 16 else {
            removeAll(keepingCapacity: true)
            return
        }
        while popLast() != nil {}
    }

    /// Reverses the array so that `popLast` takes its elements in their order: the event path
    /// moves each element out of its per-event arrays that way, where reading one in place copies
    /// it, retaining what it holds. None or one, the usual count, is left as it is: reversing them
    /// still paid the reversal's setup, about twenty instructions.
    @inlinable
    public mutating func reverseForPoppingInOrder() {
        if count > 1 { reverse() }
    }
}
