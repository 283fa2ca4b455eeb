import StateFile

/// The counter of encrypted BTHome packets, which must never go backwards, not even across a
/// restart or a power cut: receivers drop a packet whose counter fell (bthome-ble, so Home
/// Assistant, from 100 on), and a repeated counter would reuse a CCM nonce.
///
/// Persisting every value would write the flash once per packet. Instead a limit is persisted
/// ahead (`state_dir/bthome.counter`, a decimal number), counters are taken below it, and when
/// half of the reserved ones are used the next limit, `reservation` further on, is written. A
/// restart starts at the stored limit: it skips what the last run left unused, never repeats one.
/// Pure apart from `load`: the advertiser has the state files' writer write the reservations.
public struct BTHomeCounter: Sendable {
    public static let fileName = "bthome.counter"
    /// About 17 minutes of packets at the advertiser's one per second.
    static let reservation: UInt32 = 1024

    public let path: String
    /// The next counter to send.
    private(set) var next: UInt32
    /// Counters below this one are reserved: the file says so.
    private(set) var limit: UInt32
    /// A limit being written (`reservationDue` handed it out, `reserved` not yet called).
    private var writing: UInt32?

    init(path: String, next: UInt32, limit: UInt32) {
        self.path = path
        self.next = next
        self.limit = limit
    }

    /// Reads the stored limit (none: a first start, from 0) and persists the first reservation.
    /// At start-up, before sensors, the host or the mirror run on the loop (no edge or packet can
    /// wait for it): the one write on the caller's thread, which must end before the first packet.
    public static func load(stateDirectory: String) throws(BTHomeCounterError) -> BTHomeCounter {
        let path = stateDirectory + "/" + fileName
        let text: String?
        do {
            text = try StateFile.readValue(path)
        } catch {
            throw BTHomeCounterError(path: path, reason: error.description)
        }
        let start: UInt32
        if let text {
            guard let stored = UInt32(text) else {
                throw BTHomeCounterError(path: path, reason: "not a counter: \"\(text.prefix(40))\"")
            }
            start = stored
        } else {
            start = 0
        }
        var counter = BTHomeCounter(path: path, next: start, limit: start)
        guard let first = counter.reservationDue() else {
            throw BTHomeCounterError(path: path, reason: "the counter is used up (\(start)); choose a new bind key")
        }
        do {
            try StateFile.write(contents(first), to: path, mode: 0o600)
        } catch {
            throw BTHomeCounterError(path: path, reason: error.description)
        }
        counter.reserved(first, written: true)
        return counter
    }

    /// The file's contents for `limit`.
    static func contents(_ limit: UInt32) -> [UInt8] {
        Array("\(limit)\n".utf8)
    }

    /// The counter for the next packet; nil when none is reserved (the write of the next limit
    /// failed or is still under way).
    mutating func take() -> UInt32? {
        guard next < limit else { return nil }
        defer { next += 1 }
        return next
    }

    /// The limit to persist now, when half the reservation is used and no write is under way.
    mutating func reservationDue() -> UInt32? {
        guard writing == nil, limit - next <= Self.reservation / 2, limit < .max else { return nil }
        let (sum, overflow) = limit.addingReportingOverflow(Self.reservation)
        writing = overflow ? .max : sum
        return writing
    }

    /// The end of the write `reservationDue` asked for: counters up to `limit` may be taken once
    /// it is on disk; a failed write is asked for again at the next `reservationDue`.
    mutating func reserved(_ limit: UInt32, written: Bool) {
        writing = nil
        if written { self.limit = max(self.limit, limit) }
    }
}

/// The BTHome counter's file cannot be read or written.
public struct BTHomeCounterError: Error, CustomStringConvertible {
    public let path: String
    public let reason: String

    public var description: String { "BTHome encryption counter \(path): \(reason)" }
}
