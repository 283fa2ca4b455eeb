import FoundationEssentials
import Logging
import MQTTClient
import MQTTMirror
import StateFile
import Synchronization

/// One queued QoS 1 event, numbered in production order.
public struct OutboxEntry: Sendable, Equatable {
    public let sequence: UInt64
    public let message: MQTTMessage
}

/// Bounded, persistent FIFO of QoS 1 events that must reach the broker even across broker outages
/// and gattway restarts.
///
/// On disk it is an append-only journal (`outbox.jsonl` in the state directory, a `StateJournal`):
/// one JSON line per `add` (a new event) or `done` (acknowledged by the broker, or dropped because
/// the outbox was full). Replaying the journal gives the pending events in order. When the journal
/// holds more finished records than pending ones it is compacted, on the state files' writer
/// thread: the pending events replace the journal (temporary file, fsync, rename, directory
/// fsync), so a crash or power cut at any point leaves either the old or the new journal, each
/// with every record appended so far. Appends are `write(2)` calls on the caller's thread; a torn
/// last line (power loss mid-write) is detected and discarded with a warning on load. `sync()`
/// fsyncs the `add` records written since the last one, on the writer's thread after any
/// compaction asked for before (the mirror calls it after each event it hands to the broker), so
/// an accepted event survives a power cut as well; `durableSequence` tells how far that has come.
/// `done` records are not fsynced (a lost one only delivers an event twice, which QoS 1 allows).
public final class MQTTOutbox {
    public let capacity: Int
    public private(set) var droppedCount = 0
    public var pending: ArraySlice<OutboxEntry> { entries[head...] }
    public var count: Int { entries.count - head }
    /// The newest event whose `add` record is on the disk (fsynced, by a `sync()` or a compaction):
    /// it and every event before it survive a power cut. The power-cut test
    /// (Tests/vm/power-cut-tests.sh) holds the outbox to it.
    public var durableSequence: UInt64 { durable.value }

    private let journalURL: URL
    private let logger: Logger
    private var entries: [OutboxEntry] = []
    private var head = 0
    private var nextSequence: UInt64 = 1
    private var finishedRecords = 0
    private var reportedFull = false
    private let journal: StateJournal
    private let durable = DurableSequence()
    /// Whether `add` records were written since the last fsync was asked for.
    private var unsynced = false

    /// `writer`: the service's state files' writer, which fsyncs and compacts the journal.
    public init(directory: URL, capacity: Int = 10_000, writer: StateFileWriter, logger: Logger) throws {
        precondition(capacity > 0, "outbox capacity must be positive")
        self.capacity = capacity
        self.logger = logger
        self.journalURL = directory.appendingPathComponent("outbox.jsonl")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw MQTTError.invalidConfiguration("cannot create state directory \(directory.path): \(error)")
        }
        let loaded = try Self.replay(journalURL, logger: logger)
        entries = loaded
        nextSequence = (loaded.last?.sequence ?? 0) + 1
        while entries.count > capacity {
            droppedCount += 1
            entries.removeFirst()
        }
        if droppedCount > 0 {
            logger.error("MQTT outbox: journal held more events than the capacity \(capacity); dropped the \(droppedCount) oldest")
        }
        do {
            journal = try StateJournal(path: journalURL.path, writer: writer)
        } catch {
            throw MQTTError.requestFailed("cannot open MQTT outbox \(journalURL.path): \(error)")
        }
        // Start every run from a compact journal, which also discards a torn tail.
        try compact()
        if !entries.isEmpty {
            logger.info("MQTT outbox: \(entries.count) undelivered event(s) restored from \(journalURL.path)")
        }
    }

    /// Queues `message` and returns its entry. When the outbox is full the oldest event is
    /// dropped (and counted) to make room, with an error log naming it.
    @discardableResult
    public func append(_ message: MQTTMessage) throws -> OutboxEntry {
        if count == capacity {
            let oldest = entries[head]
            try finish(oldest.sequence)
            droppedCount += 1
            // One line when the outbox becomes full, then one per 1000 drops: a long outage must
            // not flood the log.
            if !reportedFull || droppedCount % 1000 == 0 {
                logger.error(
                    "MQTT outbox full (\(capacity) events): dropping the oldest events (latest #\(oldest.sequence) on \(oldest.message.topic)); \(droppedCount) dropped so far"
                )
                reportedFull = true
            }
        }
        let entry = OutboxEntry(sequence: nextSequence, message: message)
        nextSequence += 1
        try write(Record(add: entry))
        unsynced = true
        entries.append(entry)
        return entry
    }

    /// Makes every event appended so far survive a power cut, not only a crash: an fsync of the
    /// journal on the state files' writer thread, so neither the caller nor the publish waits for
    /// the disk. Called after each event is handed to the broker: until the fsync the
    /// event is already at the broker or, if the power goes first, no more lost than without an
    /// outbox.
    public func sync() {
        guard unsynced else { return }
        unsynced = false
        let through = nextSequence - 1
        journal.sync { [logger, journalURL, durable] error in
            if let error {
                logger.error("cannot fsync MQTT outbox \(journalURL.path): \(error)")
            } else {
                durable.advance(to: through)
            }
        }
    }

    /// Removes the event the broker acknowledged. Unknown sequence numbers (already dropped) are
    /// ignored.
    public func acknowledge(_ sequence: UInt64) throws {
        try finish(sequence)
        reportedFull = false
        if finishedRecords > max(count, 64) { try compact() }
    }

    private func finish(_ sequence: UInt64) throws {
        guard let index = entries[head...].firstIndex(where: { $0.sequence == sequence }) else { return }
        try write(Record(done: sequence))
        finishedRecords += 1
        if index == head {
            head += 1
            if head > 1024 && head * 2 > entries.count {
                entries.removeFirst(head)
                head = 0
            }
        } else {
            entries.remove(at: index)
        }
    }

    /// Hands the pending events to the writer to replace the journal with (`StateJournal`); a
    /// compaction already under way is left to finish first.
    private func compact() throws {
        entries = Array(entries[head...])
        head = 0
        var records: [UInt8] = []
        let encoder = JSONEncoder()
        for entry in entries {
            records += try encoder.encode(Record(add: entry))
            records.append(UInt8(ascii: "\n"))
        }
        let through = nextSequence - 1
        let started = journal.compact(to: records) { [logger, journalURL, durable] error in
            if let error {
                logger.error("cannot compact MQTT outbox \(journalURL.path): \(error); it keeps growing until the next try")
            } else {
                durable.advance(to: through)
            }
        }
        if started { finishedRecords = 0 }
    }

    private func write(_ record: Record) throws {
        var line = try JSONEncoder().encode(record)
        line.append(UInt8(ascii: "\n"))
        do {
            try journal.append(Array(line))
        } catch {
            throw MQTTError.requestFailed("cannot write MQTT outbox: \(error)")
        }
    }

    // MARK: Journal format

    private struct Record: Codable {
        var add: UInt64?
        var done: UInt64?
        var topic: String?
        var payload: Data?
        var qos: MQTTQoS?
        var retain: Bool?

        init(add entry: OutboxEntry) {
            add = entry.sequence
            topic = entry.message.topic
            payload = Data(entry.message.payload)
            qos = entry.message.qos
            retain = entry.message.retain
        }

        init(done sequence: UInt64) { done = sequence }
    }

    /// The journal's pending events; none when there is no journal yet. A journal that exists but
    /// cannot be read throws, and is left as it is: rewriting it empty would lose its events.
    private static func replay(_ url: URL, logger: Logger) throws -> [OutboxEntry] {
        let data: [UInt8]
        do {
            guard let contents = try StateFile.read(url.path) else { return [] }
            data = contents
        } catch {
            throw MQTTError.requestFailed(
                "the MQTT outbox cannot be read (\(error)); it is left untouched, with the events it holds")
        }
        var pending: [UInt64: OutboxEntry] = [:]
        let decoder = JSONDecoder()
        let lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
        for (number, line) in lines.enumerated() {
            guard let record = try? decoder.decode(Record.self, from: Data(line)) else {
                logger.warning("MQTT outbox \(url.path): line \(number + 1) is damaged (interrupted write?); ignored")
                continue
            }
            if let sequence = record.add, let topic = record.topic, let payload = record.payload {
                pending[sequence] = OutboxEntry(
                    sequence: sequence,
                    message: MQTTMessage(
                        topic: topic, payload: Array(payload), qos: record.qos ?? .atLeastOnce,
                        retain: record.retain ?? false))
            } else if let sequence = record.done {
                pending[sequence] = nil
            }
        }
        return pending.values.sorted { $0.sequence < $1.sequence }
    }
}

/// `MQTTOutbox.durableSequence`, which the writer's thread advances.
private final class DurableSequence: Sendable {
    private let sequence = Atomic<UInt64>(0)

    var value: UInt64 { sequence.load(ordering: .acquiring) }

    func advance(to newest: UInt64) {
        _ = sequence.max(newest, ordering: .acquiringAndReleasing)
    }
}
