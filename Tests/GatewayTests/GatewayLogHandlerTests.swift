import Foundation
import Gateway
import Logging
import Testing

struct GatewayLogHandlerTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000.25)

    @Test func journalLinesCarryASyslogPriorityAndNoTimestamp() {
        let line = GatewayLogHandler.format(
            level: .warning, label: "gattway", message: "broker unreachable",
            metadata: ["retry": "2s", "broker": "mqtt://b:1883"], style: .journal,
            now: now)
        #expect(line == "<4>gattway: broker unreachable broker=mqtt://b:1883 retry=2s")
    }

    @Test func terminalLinesCarryATimestampAndTheLevel() {
        let line = GatewayLogHandler.format(
            level: .info, label: "gattway", message: "running", metadata: [:],
            style: .terminal, now: now)
        #expect(line == "2027-01-15T08:00:00.250Z INFO gattway: running")
    }

    @Test func oneEventIsAlwaysOneLine() {
        let line = GatewayLogHandler.format(
            level: .error, label: "gattway", message: "first\nsecond",
            metadata: ["reason": "a b\nc"], style: .journal, now: now)
        #expect(line == #"<3>gattway: first\nsecond reason="a b\nc""#)
    }

    @Test(arguments: [
        (Logger.Level.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3),
        (.critical, 2)
    ])
    func prioritiesFollowSyslog(_ level: Logger.Level, _ priority: Int) {
        #expect(GatewayLogHandler.syslogPriority(level) == priority)
    }

    @Test func journalStyleOnlyWhenJournalStreamNamesOurStandardError() {
        #expect(GatewayLogHandler.styleForStandardError(environment: [:]) == .terminal)
        #expect(GatewayLogHandler.styleForStandardError(environment: ["JOURNAL_STREAM": "junk"]) == .terminal)
        var status = stat()
        #expect(fstat(STDERR_FILENO, &status) == 0)
        let ours = "\(status.st_dev):\(status.st_ino)"
        #expect(GatewayLogHandler.styleForStandardError(environment: ["JOURNAL_STREAM": ours]) == .journal)
        #expect(
            GatewayLogHandler.styleForStandardError(environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]) == .terminal)
    }

    @Test func handlerWritesOneLineWithMergedMetadataAtOrAboveItsLevel() {
        let lines = LockedLines()
        var logger = Logger(label: "test") { label in
            GatewayLogHandler(label: label, level: .info, style: .journal, write: { lines.append($0) })
        }
        logger[metadataKey: "device"] = "demo"
        logger.debug("hidden")
        logger.info("shown", metadata: ["central": "AA:BB"])
        #expect(lines.all == ["<6>test: shown central=AA:BB device=demo\n"])
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
