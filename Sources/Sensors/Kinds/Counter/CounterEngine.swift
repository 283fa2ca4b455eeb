import FoundationEssentials
import GPIO
import Glibc
import StateFile
import Synchronization

/// Counts rising edges (falling with `invert`); the total is kept in `<stateDirectory>/<name>.count`
/// and survives restarts. Lost events are counted too: each was a pulse.
///
/// Only a saved total is reported: a report hands the total to the state files' writer
/// (`StateFileWriter`, off the event loop) and the total is reported once the writer says it is
/// on disk, with the time it was counted. After a crash or a power cut the counter starts from at
/// least the last total anybody was told (Home Assistant's `total_increasing` must never see it go
/// back, or it takes it for a meter reset). Saving rides on reporting, so the state file is
/// written at most once per `reportInterval` while pulses come, and not at all while none do.
final class CounterEngine: SensorEngine {
    private let input: any InputLine
    private let store: CounterStore?
    private let reportNs: UInt64
    /// How long a total that could not be saved waits before the next try.
    private let retryNs: UInt64
    private var total: UInt64 = 0
    /// The total last reported (and so saved).
    private var reported: UInt64 = 0
    /// The total last handed to the writer.
    private var handedOver: UInt64 = 0
    private var lastReport: UInt64 = 0
    private var reportDue: UInt64?

    init(_ settings: CounterSettings, context: EngineContext) throws {
        store = settings.stateDirectory.map {
            CounterStore(directory: $0, name: context.name, writer: context.stateWriter, ended: context.onReadable)
        }
        total = try store?.load() ?? 0
        reported = total
        handedOver = total
        input = try context.input(settings.line, bias: settings.bias, edges: .rising)
        reportNs = settings.reportInterval.nanoseconds
        retryNs = max(reportNs, 10_000_000_000)
    }

    var inputCount: Int { 1 }

    func readEvents(ofInput index: Int, into events: inout [EdgeEvent]) throws -> Int {
        try input.readEvents(into: &events)
    }

    /// A save that ended is due at once (at the time its total was counted).
    var deadline: UInt64? {
        guard let ended = store?.endedSaveTime else { return reportDue }
        return min(ended, reportDue ?? ended)
    }

    func start(at now: UInt64) throws -> [Emission] {
        lastReport = now
        return [emission(total, at: now)]
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        total += 1
        if event.timestampNs >= lastReport + reportNs {
            reportDue = nil
            if let report = report(at: event.timestampNs) { emissions.append(report) }
        } else if reportDue == nil {
            reportDue = lastReport + reportNs
        }
    }

    func lost(_ count: Int, input: Int) {
        total += UInt64(count)
        if reportDue == nil { reportDue = lastReport + reportNs }
    }

    func tick(at now: UInt64) -> [Emission] {
        var emissions = persisted()
        if let due = reportDue, due <= now {
            reportDue = nil
            if let report = report(at: now) { emissions.append(report) }
        }
        return emissions
    }

    func stop() {
        input.release()
    }

    /// The last save, as the sensor stops: the pulses since the last report are handed to the
    /// writer; `persisted` reports how it ended.
    func persist(at now: UInt64) {
        guard store != nil, total != handedOver else { return }
        _ = report(at: now, otherwise: "the sensor stopped with a total of \(total) that the file does not have")
    }

    /// The saves that ended since the last call, in time order: the newest saved total, once
    /// (what was reported stays the last saved total); a failure not made good by a later save,
    /// its total unreported and tried again `retryNs` later, pulses or not.
    func persisted() -> [Emission] {
        guard let ended = store?.takeEnded() else { return [] }
        var emissions: [Emission] = []
        if let failed = ended.failed, failed.total > ended.saved?.total ?? reported {
            let retry = Duration.nanoseconds(Int64(clamping: retryNs))
            let what =
                failed.otherwise
                ?? "the total (\(failed.total)) is kept in memory, reported once saved, and saved again in \(retry)"
            reportDue = failed.time + retryNs
            handedOver = min(handedOver, ended.saved?.total ?? reported)
            let error = SensorError.stateFile(path: store?.path ?? "", message: failed.error.description)
            emissions.append(
                Emission(
                    channel: Emission.valueChannel, reading: .failure(.notSaved("\(error); \(what)")),
                    time: failed.time))
        }
        if let saved = ended.saved, saved.total > reported {
            reported = saved.total
            emissions.append(emission(saved.total, at: saved.time))
        }
        if emissions.count == 2, emissions[1].time < emissions[0].time { emissions.swapAt(0, 1) }
        return emissions
    }

    /// Hands the total to the writer, to be reported once saved (`persisted`); without a state
    /// directory the total is reported at once.
    private func report(at time: UInt64, otherwise: String? = nil) -> Emission? {
        lastReport = time
        guard let store else {
            reported = total
            return emission(total, at: time)
        }
        handedOver = total
        store.save(total, countedAt: time, otherwise: otherwise)
        return nil
    }

    private func emission(_ total: UInt64, at time: UInt64) -> Emission {
        Emission(channel: Emission.valueChannel, reading: .number(Double(total)), time: time)
    }
}

/// The persisted total of a counter: a decimal number in a small file, replaced by the state
/// files' writer so that a crash or power cut leaves the old total or the new one, never a torn
/// one. How each save ended is kept here for the engine, which `ended` wakes (from the writer's
/// thread) to step and report it.
final class CounterStore: Sendable {
    let path: String
    private let writer: StateFileWriter
    private let wake: @Sendable () -> Void
    private let news = Mutex(Ended())

    /// The saves that ended and that the engine has not taken yet.
    struct Ended {
        /// The highest total saved, and when it was counted.
        var saved: (total: UInt64, time: UInt64)?
        /// The last save that failed: why, its total, when it was counted, what its failure says.
        var failed: (error: StateFileError, total: UInt64, time: UInt64, otherwise: String?)?

        var isEmpty: Bool { saved == nil && failed == nil }
    }

    init(directory: String, name: String, writer: StateFileWriter, ended: @escaping @Sendable () -> Void) {
        path = directory + "/" + name + ".count"
        self.writer = writer
        self.wake = ended
    }

    func load() throws -> UInt64 {
        let text: String?
        do {
            text = try StateFile.readValue(path)
        } catch {
            throw SensorError.stateFile(path: path, message: error.description)
        }
        guard let text else { return 0 }
        guard let total = UInt64(text) else {
            throw SensorError.stateFile(path: path, message: "not a count: \"\(text.prefix(40))\"")
        }
        return total
    }

    /// Hands `total`, counted at `time`, to the writer; how it ended is `takeEnded`'s. `otherwise`:
    /// what a failure says instead of the usual.
    func save(_ total: UInt64, countedAt time: UInt64, otherwise: String?) {
        writer.write(Array("\(total)\n".utf8), to: path) { [self] error in
            news.withLock { news in
                if let error {
                    news.failed = (error, total, time, otherwise)
                } else if total >= news.saved?.total ?? 0 {
                    news.saved = (total, time)
                }
            }
            wake()
        }
    }

    /// When the earliest save that ended and is not taken yet was counted; nil when none is.
    var endedSaveTime: UInt64? {
        news.withLock { news in
            switch (news.saved?.time, news.failed?.time) {
            case (let saved?, let failed?): min(saved, failed)
            case (let saved, let failed): saved ?? failed
            }
        }
    }

    /// The saves that ended since the last call; nil when none did.
    func takeEnded() -> Ended? {
        news.withLock { news in
            defer { news = Ended() }
            return news.isEmpty ? nil : news
        }
    }
}
