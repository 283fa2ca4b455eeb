import FoundationEssentials
import Glibc
import GPIO
import StateFile

/// Counts rising edges (falling with `invert`); the total is kept in `<stateDirectory>/<name>.count`
/// and survives restarts. Lost events are counted too: each was a pulse.
final class CounterEngine: SensorEngine {
    private let input: any InputLine
    let inputs: [any InputLine]
    private let store: CounterStore?
    private let reportNs: UInt64
    private let persistNs: UInt64
    private var total: UInt64 = 0
    private var lastReport: UInt64 = 0
    private var reportDue: UInt64?
    private var persistDue: UInt64?

    init(_ settings: CounterSettings, context: EngineContext) throws {
        store = settings.stateDirectory.map { CounterStore(directory: $0, name: context.name) }
        total = try store?.load() ?? 0
        input = try context.input(settings.line, bias: settings.bias, edges: .rising)
        inputs = [input]
        reportNs = settings.reportInterval.nanoseconds
        persistNs = settings.persistInterval.nanoseconds
    }

    /// Asked after every edge, so it builds no array.
    var deadline: UInt64? {
        guard let reportDue else { return persistDue }
        guard let persistDue else { return reportDue }
        return min(reportDue, persistDue)
    }

    func start(at now: UInt64) throws -> [Emission] {
        lastReport = now
        return [emission(now)]
    }

    func handle(_ event: EdgeEvent, input: Int, into emissions: inout [Emission]) {
        if count(1, at: event.timestampNs) { emissions.append(emission(event.timestampNs)) }
    }

    func lost(_ count: Int, input: Int) {
        total += UInt64(count)
    }

    /// Whether the total is to be reported now.
    private func count(_ pulses: UInt64, at time: UInt64) -> Bool {
        total += pulses
        if store != nil, persistDue == nil { persistDue = time + persistNs }
        if time >= lastReport + reportNs {
            lastReport = time
            reportDue = nil
            return true
        }
        if reportDue == nil { reportDue = lastReport + reportNs }
        return false
    }

    func tick(at now: UInt64) -> [Emission] {
        var out: [Emission] = []
        if let due = persistDue, due <= now, let failure = periodicSave(at: now) { out.append(failure) }
        if let due = reportDue, due <= now {
            reportDue = nil
            lastReport = now
            out.append(emission(now))
        }
        return out
    }

    func stop() {
        input.release()
    }

    /// The last save, as the sensor stops.
    func persist(at now: UInt64) -> Emission? {
        save(at: now, otherwise: "the sensor stopped with a total of \(total) that the file does not have")
    }

    /// Saves the total. A failed save keeps it in memory and is tried again a persist interval
    /// later, pulses or not; each failure is reported.
    private func periodicSave(at now: UInt64) -> Emission? {
        let retry = Duration.nanoseconds(Int64(clamping: persistNs))
        let failure = save(at: now, otherwise: "the total (\(total)) is kept in memory and saved again in \(retry)")
        if failure != nil { persistDue = now + persistNs }
        return failure
    }

    /// A failure reading saying what became of the total (`otherwise`) when it could not be saved.
    private func save(at now: UInt64, otherwise: @autoclosure () -> String) -> Emission? {
        persistDue = nil
        guard let store else { return nil }
        do {
            try store.save(total)
            return nil
        } catch {
            let failure = SensorFailure.notSaved("\(error); \(otherwise())")
            return Emission(channel: Emission.valueChannel, reading: .failure(failure), unit: "", time: now)
        }
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
