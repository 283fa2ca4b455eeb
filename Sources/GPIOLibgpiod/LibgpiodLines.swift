import CGPIODShim
import EventLoop
import FoundationEssentials
import GPIO
import Glibc
import LoopClock

/// A requested input: the event loop watches the request's file descriptor and, on its thread,
/// moves kernel events into a user-space buffer as soon as they arrive (so the kernel's small
/// buffer rarely overflows), counting losses, and calls `onReadable`. Nothing polls.
final class LibgpiodInputLine: InputLine, @unchecked Sendable {
    let line: ResolvedLine
    private let chip: LibgpiodChip
    private let settings: InputSettings
    private let onReadable: @Sendable () -> Void
    private let loop = EventLoop.shared

    // Guarded by `chip.lock` (which also serialises every libgpiod call on this chip).
    private var request: OpaquePointer?
    private var watch: EventLoop.Watch?
    private var debounceTimer: DeadlineTimer?
    private var ring: EdgeEventRing
    private var loss: LossDetector?
    private var debouncer: SoftwareDebouncer?
    private var sequence: UInt64 = 0
    private var pendingLost = 0
    private var lostTotal = 0
    private var rawEvents = [gw_edge_event](repeating: gw_edge_event(), count: 64)

    init(
        chip: LibgpiodChip, request: OpaquePointer, line: ResolvedLine, settings: InputSettings,
        softwareDebounce: Bool, onReadable: @escaping @Sendable () -> Void
    ) {
        self.chip = chip
        self.request = request
        self.line = line
        self.settings = settings
        self.onReadable = onReadable
        // The user-space buffer is generous: events wait here for the sensor, not in the kernel.
        ring = EdgeEventRing(capacity: max(settings.effectiveBufferSize, 4096))
        let v2 = gw_gpiod_api_major() >= 2
        if v2 {
            loss = LossDetector(mode: .sequenceNumbers)
        } else if settings.edges == .both || softwareDebounce {
            loss = LossDetector(mode: .edgeAlternation)
        }
        guard settings.edges != .none else { return }
        if softwareDebounce {
            let initial = gw_line_request_get_value(request) == 1
            debouncer = SoftwareDebouncer(periodNs: settings.debounce.nanoseconds, initialLevel: initial)
            debounceTimer = DeadlineTimer(loop: loop) { [weak self] _ in self?.flushDebounce() }
        }
        watch = loop.watch(gw_line_request_fd(request)) { [weak self] _ in self?.drainKernel() }
    }

    deinit { release() }

    /// Runs on the loop's thread whenever the fd is readable.
    private func drainKernel() {
        let notify: Bool = chip.lock.withLock { _ in
            guard let request else { return false }
            var queued = false
            while true {
                let count = rawEvents.withUnsafeMutableBufferPointer {
                    gw_line_request_read_events(request, $0.baseAddress, $0.count)
                }
                guard count > 0 else { break }
                for raw in rawEvents.prefix(Int(count)) {
                    queued = accept(raw) || queued
                }
                if count < rawEvents.count { break }
            }
            scheduleDebounceLocked()
            return queued
        }
        if notify { onReadable() }
    }

    private func accept(_ raw: gw_edge_event) -> Bool {
        let edge: Edge = raw.edge == Int32(GW_EDGE_RISING.rawValue) ? .rising : .falling
        let kernelSequence = raw.line_seqno
        let candidate = EdgeEvent(edge: edge, timestampNs: raw.timestamp_ns, sequence: kernelSequence)
        if let missing = loss?.missing(before: candidate) { pendingLost += missing }
        if debouncer != nil {
            guard let (confirmed, at) = debouncer!.feed(edge, at: raw.timestamp_ns) else { return false }
            return emit(confirmed, at: at, kernelSequence: 0)
        }
        return emit(edge, at: raw.timestamp_ns, kernelSequence: kernelSequence)
    }

    private func emit(_ edge: Edge, at time: UInt64, kernelSequence: UInt64) -> Bool {
        guard settings.edges.accepts(edge) else { return false }
        sequence = kernelSequence != 0 ? kernelSequence : sequence + 1
        ring.append(EdgeEvent(edge: edge, timestampNs: time, sequence: sequence))
        return true
    }

    private func scheduleDebounceLocked() {
        debounceTimer?.schedule(at: debouncer?.deadline.map(LoopInstant.init(nanoseconds:)))
    }

    /// Runs on the loop's thread when a pending debounced level has held for the period.
    private func flushDebounce() {
        let notify: Bool = chip.lock.withLock { _ in
            guard request != nil else { return false }
            defer { scheduleDebounceLocked() }
            guard let (edge, at) = debouncer?.flush(through: EventLoop.now().nanoseconds) else { return false }
            return emit(edge, at: at, kernelSequence: 0)
        }
        if notify { onReadable() }
    }

    func value() throws -> Bool {
        try chip.lock.withLock { _ in
            guard let request else { throw GPIOError.released(line.name) }
            if let debouncer { return debouncer.stableLevel }
            let value = gw_line_request_get_value(request)
            guard value >= 0 else {
                throw LibgpiodErrors.fromErrno(errno, operation: "reading", target: "\(line)")
            }
            return value == 1
        }
    }

    func readEvents(into events: inout [EdgeEvent]) throws -> Int {
        try chip.lock.withLock { _ in
            guard request != nil else { throw GPIOError.released(line.name) }
            let lost = pendingLost + ring.takeOverwritten()
            pendingLost = 0
            lostTotal += lost
            ring.drain(into: &events)
            return lost
        }
    }

    var lostEvents: Int { chip.lock.withLock { _ in lostTotal + pendingLost + ring.overwritten } }

    func release() {
        let taken: (EventLoop.Watch?, LineRequest)? = chip.lock.withLock { _ in
            guard let request else { return nil }
            debounceTimer?.cancel()
            debounceTimer = nil
            defer { (self.watch, self.request) = (nil, nil) }
            return (watch, LineRequest(pointer: request))
        }
        guard let (watch, request) = taken else { return }
        // The fd must stay open until the loop has stopped watching it, which only the loop's
        // thread can be sure of (a handler may be running there now).
        let (loop, chip) = (loop, chip)
        loop.runAndWait {
            if let watch { loop.unwatch(watch) }
            chip.lock.withLock { _ in gw_line_request_release(request.pointer) }
        }
    }
}

/// A libgpiod line request handed to the loop's thread to be released there.
private struct LineRequest: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A requested output.
final class LibgpiodOutputLine: OutputLine, @unchecked Sendable {
    let line: ResolvedLine
    private let chip: LibgpiodChip
    private let consumer: String
    private let settings: OutputSettings
    // Guarded by `chip.lock`.
    private var request: OpaquePointer?
    private var current: Bool

    init(chip: LibgpiodChip, request: OpaquePointer, line: ResolvedLine, consumer: String, settings: OutputSettings) {
        self.chip = chip
        self.request = request
        self.line = line
        self.consumer = consumer
        self.settings = settings
        current = settings.initialValue
    }

    deinit { release() }

    func set(_ value: Bool) throws {
        try chip.lock.withLock { _ in
            guard let request else { throw GPIOError.released(line.name) }
            guard gw_line_request_set_value(request, value ? 1 : 0) == 0 else {
                throw LibgpiodErrors.fromErrno(errno, operation: "driving", target: "\(line)")
            }
            current = value
        }
    }

    func value() throws -> Bool {
        try chip.lock.withLock { _ in
            guard request != nil else { throw GPIOError.released(line.name) }
            return current
        }
    }

    func switchToInput(
        bias: GPIOBias, edges: EdgeDetection, debounce: Duration,
        onReadable: @escaping @Sendable () -> Void
    ) throws -> any InputLine {
        let settings = InputSettings(
            bias: bias, activeLow: settings.activeLow, edges: edges, debounce: debounce,
            eventBufferSize: settings.eventBufferSize)
        let (config, softwareDebounce) = LibgpiodBackend.inputConfig(settings)
        // The request changes hands (to the input) or, on libgpiod v1, is given back.
        let reconfigured: OpaquePointer? = try chip.lock.withLock { _ in
            guard let request = self.request else { throw GPIOError.released(line.name) }
            var config = config
            if gw_line_request_reconfigure(request, &config) == 0 {
                self.request = nil
                return request
            }
            let error = errno
            guard error == EOPNOTSUPP else {
                throw LibgpiodErrors.fromErrno(error, operation: "switching to input", target: "\(line)")
            }
            // libgpiod v1: edge events need a new request, so the line is free for a moment and
            // whatever it does in between is not seen.
            gw_line_request_release(request)
            self.request = nil
            return nil
        }
        let input = try reconfigured ?? chip.request(line, consumer: consumer, config: config)
        return LibgpiodInputLine(
            chip: chip, request: input, line: line, settings: settings,
            softwareDebounce: softwareDebounce, onReadable: onReadable)
    }

    func release() {
        chip.lock.withLock { _ in
            if let request { gw_line_request_release(request) }
            request = nil
        }
    }
}
