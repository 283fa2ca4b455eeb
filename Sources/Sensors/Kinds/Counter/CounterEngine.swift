import FoundationEssentials
import Glibc
import GPIO
import StateFile

/// Counts rising edges (falling with `invert`); the total is kept in `<stateDirectory>/<name>.count`
/// and survives restarts. Lost events are counted too: each was a pulse.
///
/// A total is saved before it is reported, and only a saved total is reported: after a crash or a
/// power cut the counter starts from at least the last total anybody was told (Home Assistant's
/// `total_increasing` must never see it go back, or it takes it for a meter reset). Saving rides on
/// reporting, so the state file is written at most once per `reportInterval` while pulses come,
/// and not at all while none do.
final class CounterEngine: SensorEngine {
    private let input: any InputLine
    let inputs: [any InputLine]
    private let store: CounterStore?
    private let reportNs: UInt64
    /// How long a total that could not be saved waits before the next try.
    private let retryNs: UInt64
    private var total: UInt64 = 0
    /// The total last reported (and so saved).
    private var reported: UInt64 = 0
    private var lastReport: UInt64 = 0
    private var reportDue: UInt64?

    init(_ settings: CounterSettings, context: EngineContext) throws {
        store = settings.stateDirectory.map { CounterStore(directory: $0, name: context.name) }
        total = try store?.load() ?? 0
        reported = total
        input = try context.input(settings.line, bias: settings.bias, edges: .rising)
        inputs = [input]
        reportNs = settings.reportInterval.nanoseconds
        retryNs = max(reportNs, 10_000_000_000)
    }

    var deadline: UInt64? { reportDue }

    func start(at now: UInt64) throws -> [Emission] {
        lastReport = now
        return [emission(now)]
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
        guard let due = reportDue, due <= now else { return [] }
        reportDue = nil
        return report(at: now).map { [$0] } ?? []
    }

    func stop() {
        input.release()
    }

    /// The last save, as the sensor stops: the pulses since the last report, saved, are reported.
    func persist(at now: UInt64) -> Emission? {
        guard total != reported else { return nil }
        return report(at: now, otherwise: "the sensor stopped with a total of \(total) that the file does not have")
    }

    /// Saves the total, then reports it. A total that could not be saved is not reported (what
    /// was reported stays the last saved one) and is tried again `retryNs` later, pulses or not;
    /// each failure is reported.
    private func report(at time: UInt64, otherwise: String? = nil) -> Emission? {
        lastReport = time
        guard let store else {
            reported = total
            return emission(time)
        }
        do {
            try store.save(total)
        } catch {
            let retry = Duration.nanoseconds(Int64(clamping: retryNs))
            let what = otherwise ?? "the total (\(total)) is kept in memory, reported once saved, and saved again in \(retry)"
            reportDue = time + retryNs
            return Emission(
                channel: Emission.valueChannel, reading: .failure(.notSaved("\(error); \(what)")), unit: "", time: time)
        }
        reported = total
        return emission(time)
    }

    private func emission(_ time: UInt64) -> Emission {
        Emission(channel: Emission.valueChannel, reading: .number(Double(total)), unit: "", time: time)
    }
}

/// The persisted total of a counter: a decimal number in a small file, replaced through
/// `StateFile` so that a crash or power cut leaves the old total or the new one, never a torn one.
struct CounterStore {
    let path: String

    init(directory: String, name: String) {
        path = directory + "/" + name + ".count"
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

    func save(_ total: UInt64) throws {
        do {
            try StateFile.write(Array("\(total)\n".utf8), to: path, mode: 0o600)
        } catch {
            throw SensorError.stateFile(path: path, message: error.description)
        }
    }
}
