extension Array {
    /// Removes every element and keeps the storage, for the arrays the event path reuses from one
    /// event to the next: the few elements of one event are popped, where
    /// `removeAll(keepingCapacity: true)` goes through `replaceSubrange`, a few hundred
    /// instructions however few there are. Inlinable, so it is specialized where it is used.
    @inlinable
    public mutating func removeAllKeepingStorage() {
        while popLast() != nil {}
    }
}
