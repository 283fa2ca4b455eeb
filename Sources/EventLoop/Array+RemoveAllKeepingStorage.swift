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
}
