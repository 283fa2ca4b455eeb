import Synchronization

/// A test's end of a synchronous event sink: `append` is the sink (the host's, the peripheral's,
/// the pipeline's stages' call it on the event loop, in the call that produced each event), and
/// the test reads what came, in order, or waits for what is still to come.
///
///     let events = EventLog<HostEvent>()
///     await host.setEventSink(events.append)
///     let connected = try await events.next { if case .connected = $0 { true } else { false } }
///
/// Two ways to read: `next` and `takeAll` take events in order, each once (what iterating a
/// stream did), and `first` looks at everything recorded, taken or not. Both throw when nothing matching comes
/// within their limit, so a missing event fails the test instead of hanging it.
public final class EventLog<Event: Sendable>: Sendable {
    private struct Waiter {
        let predicate: @Sendable (Event) -> Bool
        /// Whether a match is taken (`next`), moving the cursor past it.
        let takes: Bool
        let continuation: CheckedContinuation<Event?, Never>
    }

    private struct State {
        var events: [Event] = []
        /// The position of the first event `next` has not taken.
        var cursor = 0
        var waiters: [Int: Waiter] = [:]
        var nextWaiterID = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Records `event` and wakes whoever waits for it.
    public func append(_ event: Event) {
        let woken = state.withLock { state in
            state.events.append(event)
            var woken: [CheckedContinuation<Event?, Never>] = []
            for (id, waiter) in state.waiters.sorted(by: { $0.key < $1.key }) where waiter.predicate(event) {
                // One taker takes it; the others wait for the next match.
                if waiter.takes {
                    guard state.cursor < state.events.count else { continue }
                    state.cursor = state.events.count
                }
                state.waiters[id] = nil
                woken.append(waiter.continuation)
            }
            return woken
        }
        for continuation in woken { continuation.resume(returning: event) }
    }

    /// Everything recorded so far, in order.
    public var all: [Event] { state.withLock { $0.events } }

    /// The events not taken yet, taking them: what a synchronous sink has delivered so far.
    public func takeAll() -> [Event] {
        state.withLock { state in
            defer { state.cursor = state.events.count }
            return Array(state.events[state.cursor...])
        }
    }

    /// The next event not yet taken that matches `predicate`, taking it and those before it.
    public func next(
        within limit: Duration = .seconds(30), where predicate: @escaping @Sendable (Event) -> Bool = { _ in true }
    ) async throws -> Event {
        try await wait(within: limit, takes: true, for: predicate)
    }

    /// The first event recorded (or still to come) that matches `predicate`; takes nothing.
    public func first(
        within limit: Duration = .seconds(30), where predicate: @escaping @Sendable (Event) -> Bool
    ) async throws -> Event {
        try await wait(within: limit, takes: false, for: predicate)
    }

    private func wait(
        within limit: Duration, takes: Bool, for predicate: @escaping @Sendable (Event) -> Bool
    ) async throws
        -> Event
    {
        let found: Event? = await withCheckedContinuation { continuation in
            let waiting: (event: Event?, id: Int?) = state.withLock { state in
                let start = takes ? state.cursor : 0
                if let index = state.events[start...].firstIndex(where: predicate) {
                    if takes { state.cursor = index + 1 }
                    return (state.events[index], nil)
                }
                if takes { state.cursor = state.events.count }
                let id = state.nextWaiterID
                state.nextWaiterID += 1
                state.waiters[id] = Waiter(predicate: predicate, takes: takes, continuation: continuation)
                return (nil, id)
            }
            guard let id = waiting.id else {
                continuation.resume(returning: waiting.event)
                return
            }
            Task {
                try? await Task.sleep(for: limit)
                let expired = state.withLock { $0.waiters.removeValue(forKey: id) }
                expired?.continuation.resume(returning: nil)
            }
        }
        guard let found else {
            throw TestFailure("no matching \(Event.self) within \(limit); events: \(all)")
        }
        return found
    }
}
