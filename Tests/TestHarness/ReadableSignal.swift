/// Turns `onReadable` callbacks into something a test can await, with a timeout: the kernel
/// delivers edges asynchronously, so the GPIO tests wait (briefly) where the simulator's do not.
public final class ReadableSignal: Sendable {
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    public init() { (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1)) }

    public var callback: @Sendable () -> Void {
        let continuation = continuation
        return { continuation.yield() }
    }

    /// Waits until the line signalled readable, or fails after `timeout`.
    public func wait(timeout: Duration = .seconds(5)) async -> Bool {
        let stream = stream
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var iterator = stream.makeAsyncIterator()
                return await iterator.next() != nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
