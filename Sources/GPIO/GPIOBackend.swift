/// A source of GPIO lines: the Linux kernel through libgpiod, or the simulator. Everything above
/// the GPIO module talks to this protocol only.
public protocol GPIOBackend: Sendable {
    /// All chips and their lines, for `gattway lines` and for resolving names.
    func chips() throws -> [ChipInfo]
    /// The current monotonic time of this backend's clock, in nanoseconds (the kernel's
    /// CLOCK_MONOTONIC, or the simulator's clock).
    func now() -> UInt64
    /// Requests an input. `onReadable` is called (on an arbitrary thread) whenever new edge
    /// events are waiting to be read with `InputLine.readEvents()`.
    func requestInput(_ selector: LineSelector, consumer: String, settings: InputSettings,
                      onReadable: @escaping @Sendable () -> Void) throws -> any InputLine
    /// Requests an output, driven to `settings.initialValue` at once.
    func requestOutput(_ selector: LineSelector, consumer: String,
                       settings: OutputSettings) throws -> any OutputLine
}

/// A requested input line. Edge events are read without blocking; the backend signals their
/// arrival through the `onReadable` callback given at request time (a DispatchSource on the
/// request's file descriptor for libgpiod), so nobody polls.
public protocol InputLine: AnyObject, Sendable {
    var line: ResolvedLine { get }
    /// The logical level now (after active-low).
    func value() throws -> Bool
    /// Takes all pending edge events in order, and the count of events found lost since the
    /// previous read.
    func readEvents() throws -> EdgeEventBatch
    /// Total events lost since the request.
    var lostEvents: Int { get }
    /// Gives the line back to the kernel. Idempotent; also done on deinit.
    func release()
}

/// A requested output line.
public protocol OutputLine: AnyObject, Sendable {
    var line: ResolvedLine { get }
    /// Drives the logical level (after active-low).
    func set(_ value: Bool) throws
    /// The logical level last driven.
    func value() throws -> Bool
    /// Gives the line back to the kernel. Idempotent; also done on deinit.
    func release()
}

extension GPIOBackend {
    /// Resolves a selector against this backend's chips, with the errors of `LineResolver`.
    public func resolve(_ selector: LineSelector) throws -> ResolvedLine {
        try LineResolver.resolve(selector, in: chips())
    }
}
