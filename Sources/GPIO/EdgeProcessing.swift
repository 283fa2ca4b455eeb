import EventLoop

/// The pieces of edge handling shared by all backends, so the libgpiod and simulated backends
/// behave the same: loss detection, software debounce, bounded buffering.

/// Counts events that went missing between reads.
///
/// With kernel sequence numbers (libgpiod v2, simulator) a gap in the per-line sequence is the
/// exact number lost. Without them (libgpiod v1) the only evidence is an impossible sequence:
/// two rising (or two falling) edges in a row on a line watched for both edges mean at least one
/// edge in between was lost; each such pair counts as one.
package struct LossDetector {
    package enum Mode { case sequenceNumbers, edgeAlternation }

    package let mode: Mode
    /// Kernel sequence numbers of a request start at 1.
    private var lastSequence: UInt64 = 0
    private var lastEdge: Edge?

    package init(mode: Mode) { self.mode = mode }

    /// Returns how many events are missing right before `event`.
    package mutating func missing(before event: EdgeEvent) -> Int {
        switch mode {
        case .sequenceNumbers:
            defer { lastSequence = event.sequence }
            guard event.sequence > lastSequence + 1 else { return 0 }
            return Int(event.sequence - lastSequence - 1)
        case .edgeAlternation:
            defer { lastEdge = event.edge }
            return lastEdge == event.edge ? 1 : 0
        }
    }
}

/// Debounce in software with the kernel's semantics (gpiolib-cdev): a new level is reported
/// only once it has held for the whole period, stamped at the end of that period; bounces
/// shorter than the period never produce events.
package struct SoftwareDebouncer {
    package let periodNs: UInt64
    package private(set) var stableLevel: Bool
    private var pending: (level: Bool, since: UInt64)?

    package init(periodNs: UInt64, initialLevel: Bool) {
        self.periodNs = periodNs
        self.stableLevel = initialLevel
    }

    /// When the pending level (if any) becomes stable unless another edge arrives first.
    package var deadline: UInt64? { pending.map { $0.since + periodNs } }

    /// Feeds one raw edge; returns the debounced edge confirmed by it, if any.
    package mutating func feed(_ edge: Edge, at time: UInt64) -> (Edge, UInt64)? {
        let confirmed = flush(through: time)
        if edge.level != stableLevel {
            pending = (edge.level, time)
        } else {
            pending = nil
        }
        return confirmed
    }

    /// Confirms the pending level if it has held for the period by `time`.
    package mutating func flush(through time: UInt64) -> (Edge, UInt64)? {
        guard let pending, time >= pending.since + periodNs else { return nil }
        self.pending = nil
        stableLevel = pending.level
        return (pending.level ? .rising : .falling, pending.since + periodNs)
    }
}

/// A bounded FIFO of edge events that overwrites the oldest when full, like the kernel's
/// per-request kfifo; overwritten events are counted.
package struct EdgeEventRing {
    package let capacity: Int
    /// The slots, grown to `capacity` as events first arrive (a large buffer costs memory only
    /// once it is used), then written round and round: no event is moved once written.
    private var slots: [EdgeEvent] = []
    /// The oldest event held, and how many are held from it on, wrapping at `capacity`. Every
    /// drain empties the ring, so `head` leaves 0 only when the ring is full and overwrites.
    private var head = 0
    private var held = 0
    package private(set) var overwritten = 0

    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    package mutating func append(_ event: EdgeEvent) {
        if held == capacity {
            slots[head] = event
            head = head + 1 == capacity ? 0 : head + 1
            overwritten += 1
        } else if held < slots.count {
            slots[held] = event
            held += 1
        } else {
            slots.append(event)
            held += 1
        }
    }

    /// Removes everything buffered, appending it to `events` oldest first. Neither the slots nor
    /// the caller's array is reallocated from read to read.
    package mutating func drain(into events: inout [EdgeEvent]) {
        var position = head
        for _ in 0..<held {
            events.append(slots[position])
            position = position + 1 == capacity ? 0 : position + 1
        }
        head = 0
        held = 0
    }

    /// Returns and resets the overwritten count.
    package mutating func takeOverwritten() -> Int {
        defer { overwritten = 0 }
        return overwritten
    }
}
