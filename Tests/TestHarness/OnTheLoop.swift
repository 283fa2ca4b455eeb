import EventLoop
import Testing

/// Runs a test (its suite's `init` too) on the event loop, where gattway runs the parts the test
/// drives directly: their loop-bound state (`LoopBound`) traps anywhere else.
public struct OnTheLoop: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(EventLoop.shared) { try await function() }
    }
}

extension SuiteTrait where Self == OnTheLoop {
    public static var onTheLoop: OnTheLoop { OnTheLoop() }
}

extension TestTrait where Self == OnTheLoop {
    public static var onTheLoop: OnTheLoop { OnTheLoop() }
}
