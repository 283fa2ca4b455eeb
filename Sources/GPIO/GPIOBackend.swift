/// A source of GPIO lines: the Linux kernel through libgpiod, or the simulator. Everything above
/// the GPIO module talks to this protocol only.
public protocol GPIOBackend: Sendable {
    /// All chips and their lines, for `gattway lines` and for resolving names.
    func chips() throws -> [ChipInfo]
    /// The Raspberry Pi the chips belong to, when they are a Pi's: explains a kernel that shows
    /// no chip for its header.
    var board: RaspberryPiBoard? { get }
    /// The current monotonic time of this backend's clock, in nanoseconds (the kernel's
    /// CLOCK_MONOTONIC, or the simulator's clock).
    func now() -> UInt64
    /// Requests an input. `onReadable` is called (on an arbitrary thread) whenever new edge
    /// events are waiting to be read with `InputLine.readEvents()`.
    func requestInput(
        _ selector: LineSelector, consumer: String, settings: InputSettings,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine
    /// Requests an output, driven to `settings.initialValue` at once.
    func requestOutput(
        _ selector: LineSelector, consumer: String,
        settings: OutputSettings
    ) throws -> any OutputLine
}

/// A requested input line. Edge events are read without blocking; the backend signals their
/// arrival through the `onReadable` callback given at request time (a DispatchSource on the
/// request's file descriptor for libgpiod), so nobody polls.
public protocol InputLine: AnyObject, Sendable {
    var line: ResolvedLine { get }
    /// The logical level now (after active-low).
    func value() throws -> Bool
    /// Takes all pending edge events in order, appending them to `events`, and returns the count
    /// of events found lost since the previous read. Into the caller's array, which a reader keeps
    /// from one read to the next: a read on every edge then allocates nothing.
    func readEvents(into events: inout [EdgeEvent]) throws -> Int
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
    /// Stops driving the line and watches it as an input in one step, with edge detection on
    /// from that instant: a device that answers as soon as the line is let go (a DHT22 replies
    /// ~20 µs later) loses no edge, however late the caller runs. The input keeps this line's
    /// active-low setting and uses the event buffer reserved by `OutputSettings.eventBufferSize`;
    /// `onReadable` is as for `GPIOBackend.requestInput`.
    ///
    /// On libgpiod v2 this reconfigures the same request (one kernel call); the simulator does
    /// the same. libgpiod v1 cannot enable edge events on a line it keeps, so there the output is
    /// released and the line requested again as an input: edges in between are lost.
    ///
    /// Afterwards this output handle no longer owns the line (`set` throws `.released`,
    /// `release()` does nothing); the returned input does. If the switch fails the output is
    /// left as it was, except on the v1 route where it is already released.
    func switchToInput(
        bias: GPIOBias, edges: EdgeDetection, debounce: Duration,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine
    /// Gives the line back to the kernel. Idempotent; also done on deinit.
    func release()
}

extension InputLine {
    /// All pending edge events in order, and the count of events found lost since the previous
    /// read, in an array of their own.
    public func readEvents() throws -> EdgeEventBatch {
        var events: [EdgeEvent] = []
        let lost = try readEvents(into: &events)
        return EdgeEventBatch(events: events, lost: lost)
    }
}

extension GPIOBackend {
    /// No board: the simulator's chips are nobody's.
    public var board: RaspberryPiBoard? { nil }

    /// Resolves a selector against this backend's chips, with the errors of `LineResolver`.
    public func resolve(_ selector: LineSelector) throws -> ResolvedLine {
        try LineResolver.resolve(selector, in: chips(), board: board)
    }
}
