/// Whether a sensor's readings are current: a sensor that has given no good reading for its
/// deadline is *unavailable*, and its last value is no longer to be shown as what it measures.
/// It is available again with its next good reading. Pure: time comes in with each call.
///
/// The deadline is the sensor's own: a polled sensor (DHT, HC-SR04) reads every `interval`, so
/// one that has read nothing good for `readsPerDeadline` intervals, and at least
/// `minimumDeadline`, has stopped answering (a loose wire, a dead sensor), while one failed read
/// is noise. An edge-driven sensor (a contact, a counter) may rightly be quiet for days, so
/// silence says nothing; a GPIO error on its line (the line or its chip gone) makes it
/// unavailable at once. A state file that could not be saved (`notSaved`) says nothing of the
/// readings and is not counted.
struct SensorHealth {
    /// Reads a polled sensor may miss in a row before it is unavailable.
    static let readsPerDeadline: UInt64 = 3
    /// The shortest deadline, so a fast poll (an HC-SR04 every 100 ms) is not called dead for a
    /// few missed echoes.
    static let minimumDeadlineNs: UInt64 = 10_000_000_000

    /// nil: an edge-driven sensor, whose silence is no sign.
    let deadlineNs: UInt64?
    private(set) var isAvailable = true
    private var lastGood: UInt64
    private var lastFailure: SensorFailure?

    /// `pollInterval`: how often the sensor reads, nil when it is edge-driven.
    init(pollIntervalNs: UInt64?, startedAt now: UInt64) {
        deadlineNs = pollIntervalNs.map { max($0 * Self.readsPerDeadline, Self.minimumDeadlineNs) }
        lastGood = now
    }

    /// When the sensor becomes unavailable unless a good reading comes first.
    var deadline: UInt64? {
        guard isAvailable, let deadlineNs else { return nil }
        return lastGood + deadlineNs
    }

    /// A good reading at `time`; the availability emission when it brings the sensor back.
    mutating func good(at time: UInt64) -> Emission? {
        lastGood = max(lastGood, time)
        lastFailure = nil
        guard !isAvailable else { return nil }
        isAvailable = true
        return Emission(channel: Emission.availabilityChannel, reading: .bool(true), time: time)
    }

    /// A failed reading at `time`; the availability emission when the sensor is now unavailable.
    mutating func failed(_ failure: SensorFailure, at time: UInt64) -> Emission? {
        if case .notSaved = failure { return nil }
        lastFailure = failure
        guard isAvailable else { return nil }
        if deadlineNs == nil { return unavailable(at: time) }
        return tick(at: time)
    }

    /// The deadline check at `time`.
    mutating func tick(at time: UInt64) -> Emission? {
        guard let due = deadline, time >= due else { return nil }
        return unavailable(at: time)
    }

    private mutating func unavailable(at time: UInt64) -> Emission {
        isAvailable = false
        let silence = Duration.nanoseconds(Int64(clamping: time - lastGood))
        let failure = SensorFailure.unavailable(
            deadlineNs == nil
                ? "\(lastFailure.map { "\($0)" } ?? "its line failed")"
                : "no good reading for \(Self.seconds(silence))"
                    + (lastFailure.map { " (last: \($0))" } ?? ""))
        return Emission(channel: Emission.availabilityChannel, reading: .failure(failure), time: time)
    }

    private static func seconds(_ duration: Duration) -> String {
        "\(duration.components.seconds) s"
    }
}
