import LoopClock

/// The log line for a sensor's lost GPIO events: edges the kernel dropped because they came
/// faster than gattway read them, so counts and the edges in between are missing. The first loss
/// is reported at once; after that at most one line per `interval`, with how many were lost since
/// the last line, the rate, and the total.
struct LostEventsLog {
    let sensor: String
    let interval: Duration
    private var reportedTotal = 0
    private var reportedAt: LoopInstant?

    init(sensor: String, interval: Duration = .seconds(60)) {
        self.sensor = sensor
        self.interval = interval
    }

    /// The sensor's running total of lost events, as it reports it; the line to log, if one is due.
    mutating func record(total: Int, at now: LoopInstant) -> String? {
        guard total > reportedTotal else { return nil }
        if let last = reportedAt, now - last < interval { return nil }
        let lost = total - reportedTotal
        let line: String
        if let last = reportedAt {
            let seconds = (now - last) / .seconds(1)
            let rate = (Double(lost) / seconds * 100).rounded() / 100
            line =
                "sensor \(sensor) lost \(lost) GPIO events in the last \(Int(seconds.rounded())) s "
                + "(\(rate)/s, \(total) since start): the line changes faster than gattway reads it"
        } else {
            line =
                "sensor \(sensor) lost \(lost) GPIO events (\(total) since start): the line changes "
                + "faster than gattway reads it, so counts and the edges in between are missing"
        }
        reportedTotal = total
        reportedAt = now
        return line
    }
}
