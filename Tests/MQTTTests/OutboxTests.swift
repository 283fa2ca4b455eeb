import Foundation
import Logging
import StateFile
import TestHarness
import Testing

@testable import MQTTMirror
@testable import MQTTService

@Suite("Persistent outbox")
struct OutboxTests {
    /// Compacts and fsyncs the journals; a test waits for it (`waitUntilIdle`) before it reads a
    /// journal or reopens one, as the mirror's replacement does.
    let writer = StateFileWriter()

    func message(_ n: Int) -> MQTTMessage { MQTTMessage(topic: "t/\(n)", text: "event \(n)") }

    @Test func pendingEventsSurviveReopeningInOrder() throws {
        let directory = try temporaryDirectory("outbox")
        do {
            let outbox = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
            for n in 1...5 { try outbox.append(message(n)) }
            try outbox.acknowledge(1)
            try outbox.acknowledge(3)
        }
        writer.waitUntilIdle()
        let reopened = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
        #expect(reopened.pending.map(\.message) == [message(2), message(4), message(5)])
        // Sequence numbers keep increasing after a restart.
        #expect(try reopened.append(message(6)).sequence == 6)
    }

    @Test func fullOutboxDropsOldestAndCounts() throws {
        let directory = try temporaryDirectory("outbox")
        let log = LogCapture()
        let outbox = try MQTTOutbox(directory: directory, capacity: 3, writer: writer, logger: Logger(label: "outbox") { _ in log })
        for n in 1...5 { try outbox.append(message(n)) }
        #expect(log.text.components(separatedBy: "MQTT outbox full (3 events)").count == 2, "one log line per full episode")
        #expect(outbox.pending.map(\.message) == [message(3), message(4), message(5)])
        #expect(outbox.droppedCount == 2)
        writer.waitUntilIdle()
        let reopened = try MQTTOutbox(directory: directory, capacity: 3, writer: writer, logger: testLogger)
        #expect(reopened.pending.map(\.message) == [message(3), message(4), message(5)])
    }

    @Test func compactionKeepsTheJournalSmall() throws {
        let directory = try temporaryDirectory("outbox")
        let outbox = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
        for n in 1...1000 {
            let entry = try outbox.append(message(n))
            if n % 10 != 0 { try outbox.acknowledge(entry.sequence) }
        }
        writer.waitUntilIdle()
        let journal = directory.appendingPathComponent("outbox.jsonl")
        let lines = try String(contentsOf: journal, encoding: .utf8).split(separator: "\n").count
        // A compaction runs on the writer while appends go on, and the next one waits for it: the
        // journal holds a few dozen more finished records than with compactions in place.
        #expect(lines < 400, "journal has \(lines) lines for 100 pending events")
        writer.waitUntilIdle()
        let reopened = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
        #expect(reopened.pending.map(\.message) == (1...100).map { message($0 * 10) })
    }

    /// A journal that exists but cannot be read is not taken for an empty one and rewritten
    /// empty, losing its events: the outbox does not open, and the journal is left as it was.
    /// (A directory in its place: unreadable even to root.)
    @Test func anUnreadableJournalIsNeverOverwritten() throws {
        let directory = try temporaryDirectory("outbox")
        let journal = directory.appendingPathComponent("outbox.jsonl")
        try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: false)
        let marker = journal.appendingPathComponent("kept")
        try "events".write(to: marker, atomically: true, encoding: .utf8)
        #expect {
            _ = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
        } throws: { error in
            "\(error)".contains("the MQTT outbox cannot be read (cannot read \(journal.path): Is a directory)")
        }
        #expect(try String(contentsOf: marker, encoding: .utf8) == "events")
    }

    @Test func tornLastLineIsIgnored() throws {
        let directory = try temporaryDirectory("outbox")
        do {
            let outbox = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
            try outbox.append(message(1))
            try outbox.append(message(2))
        }
        let journal = directory.appendingPathComponent("outbox.jsonl")
        let handle = try FileHandle(forWritingTo: journal)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"add":3,"topic":"t/3","payl"#.utf8))
        try handle.close()
        writer.waitUntilIdle()
        let reopened = try MQTTOutbox(directory: directory, writer: writer, logger: testLogger)
        #expect(reopened.pending.map(\.message) == [message(1), message(2)])
        #expect(try reopened.append(message(3)).sequence == 3)
    }
}
