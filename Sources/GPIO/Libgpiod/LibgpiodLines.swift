import CGPIODShim
import Dispatch
import Foundation

/// A requested input: a DispatchSource on the request's file descriptor moves kernel events
/// into a user-space buffer as soon as they arrive (so the kernel's small buffer rarely
/// overflows), counting losses, and calls `onReadable`. Nothing polls.
final class LibgpiodInputLine: InputLine, @unchecked Sendable {
    let line: ResolvedLine
    private let chip: LibgpiodChip
    private let settings: InputSettings
    private let onReadable: @Sendable () -> Void
    private let queue: DispatchQueue
    private let queueKey = DispatchSpecificKey<Bool>()
    private let cancelled = DispatchSemaphore(value: 0)

    // Guarded by `chip.lock` (which also serialises every libgpiod call on this chip).
    private var request: OpaquePointer?
    private var source: DispatchSourceRead?
    private var debounceTimer: DispatchSourceTimer?
    private var ring: EdgeEventRing
    private var loss: LossDetector?
    private var debouncer: SoftwareDebouncer?
    private var sequence: UInt64 = 0
    private var pendingLost = 0
    private var lostTotal = 0
    private var rawEvents = [gw_edge_event](repeating: gw_edge_event(), count: 64)

    init(chip: LibgpiodChip, request: OpaquePointer, line: ResolvedLine, settings: InputSettings,
         softwareDebounce: Bool, onReadable: @escaping @Sendable () -> Void) {
        self.chip = chip
        self.request = request
        self.line = line
        self.settings = settings
        self.onReadable = onReadable
        queue = DispatchQueue(label: "gattway.gpio.\(line.name)")
        // The user-space buffer is generous: events wait here for the sensor, not in the kernel.
        ring = EdgeEventRing(capacity: max(settings.effectiveBufferSize, 4096))
        let v2 = gw_gpiod_api_major() >= 2
        if v2 {
            loss = LossDetector(mode: .sequenceNumbers)
        } else if settings.edges == .both || softwareDebounce {
            loss = LossDetector(mode: .edgeAlternation)
        }
        queue.setSpecific(key: queueKey, value: true)
        guard settings.edges != .none else { return }
        if softwareDebounce {
            let initial = gw_line_request_get_value(request) == 1
            debouncer = SoftwareDebouncer(periodNs: settings.debounce.nanoseconds, initialLevel: initial)
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.flushDebounce() }
            timer.resume()
            debounceTimer = timer
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: gw_line_request_fd(request), queue: queue)
        source.setEventHandler { [weak self] in self?.drainKernel() }
        let semaphore = cancelled
        source.setCancelHandler { semaphore.signal() }
        source.resume()
        self.source = source
    }

    deinit { release() }

    /// Runs on `queue` whenever the fd is readable.
    private func drainKernel() {
        let notify: Bool = chip.lock.withLock {
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
        guard let debounceTimer, let deadline = debouncer?.deadline else { return }
        let now = monotonicNowNs()
        debounceTimer.schedule(deadline: .now() + .nanoseconds(Int(deadline > now ? deadline - now : 0)))
    }

    /// Runs on `queue` when a pending debounced level has held for the period.
    private func flushDebounce() {
        let notify: Bool = chip.lock.withLock {
            guard request != nil, let (edge, at) = debouncer?.flush(through: monotonicNowNs()) else { return false }
            return emit(edge, at: at, kernelSequence: 0)
        }
        if notify { onReadable() }
    }

    func value() throws -> Bool {
        try chip.lock.withLock {
            guard let request else { throw GPIOError.released(line.name) }
            if let debouncer { return debouncer.stableLevel }
            let value = gw_line_request_get_value(request)
            guard value >= 0 else {
                throw LibgpiodErrors.fromErrno(errno, operation: "reading", target: "\(line)")
            }
            return value == 1
        }
    }

    func readEvents() throws -> EdgeEventBatch {
        try chip.lock.withLock {
            guard request != nil else { throw GPIOError.released(line.name) }
            let lost = pendingLost + ring.takeOverwritten()
            pendingLost = 0
            lostTotal += lost
            return EdgeEventBatch(events: ring.drain(), lost: lost)
        }
    }

    var lostEvents: Int { chip.lock.withLock { lostTotal + pendingLost + ring.overwritten } }

    func release() {
        let source: DispatchSourceRead? = chip.lock.withLock {
            guard request != nil else { return nil }
            debounceTimer?.cancel()
            debounceTimer = nil
            defer { self.source = nil }
            return self.source
        }
        // The fd must stay open until dispatch has stopped watching it.
        if let source {
            source.cancel()
            if DispatchQueue.getSpecific(key: queueKey) == nil { cancelled.wait() }
        }
        chip.lock.withLock {
            if let request { gw_line_request_release(request) }
            request = nil
        }
    }
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
        try chip.lock.withLock {
            guard let request else { throw GPIOError.released(line.name) }
            guard gw_line_request_set_value(request, value ? 1 : 0) == 0 else {
                throw LibgpiodErrors.fromErrno(errno, operation: "driving", target: "\(line)")
            }
            current = value
        }
    }

    func value() throws -> Bool {
        try chip.lock.withLock {
            guard request != nil else { throw GPIOError.released(line.name) }
            return current
        }
    }

    func switchToInput(bias: GPIOBias, edges: EdgeDetection, debounce: Duration,
                       onReadable: @escaping @Sendable () -> Void) throws -> any InputLine {
        let settings = InputSettings(bias: bias, activeLow: settings.activeLow, edges: edges, debounce: debounce,
                                     eventBufferSize: settings.eventBufferSize)
        let (config, softwareDebounce) = LibgpiodBackend.inputConfig(settings)
        // The request changes hands (to the input) or, on libgpiod v1, is given back.
        let reconfigured: OpaquePointer? = try chip.lock.withLock {
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
        return LibgpiodInputLine(chip: chip, request: input, line: line, settings: settings,
                                 softwareDebounce: softwareDebounce, onReadable: onReadable)
    }

    func release() {
        chip.lock.withLock {
            if let request { gw_line_request_release(request) }
            request = nil
        }
    }
}
