/// Waits, without blocking a thread of the cooperative pool, until `condition` holds or `limit`
/// has passed; returns whether it holds. For what the event loop finishes after a turn the test
/// cannot await (a closure it has run but not released yet, a task winding down), where one
/// `runAndWait` would be both a race and a blocked pool thread.
public func eventually(within limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while !condition() {
        guard clock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
