import EventLoop
import Testing

/// Runs a test (its suite's `init` too) on the event loop, where the gateway runs the parts it
/// tests directly: their loop-bound state (`LoopBound`) traps anywhere else.
struct OnTheLoop: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(EventLoop.shared) { try await function() }
    }
}

extension SuiteTrait where Self == OnTheLoop {
    static var onTheLoop: OnTheLoop { OnTheLoop() }
}

extension TestTrait where Self == OnTheLoop {
    static var onTheLoop: OnTheLoop { OnTheLoop() }
}
