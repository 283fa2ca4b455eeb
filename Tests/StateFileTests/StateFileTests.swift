import BluetoothCore
import BluetoothSMP
import Foundation
import Gateway
import Logging
import TestHarness
import Testing

@testable import BluetoothHost
@testable import MQTTService
@testable import StateFile

/// Serialized: each crash test keeps a writer fsyncing in a loop, and six of them at once loaded
/// the machine enough to starve timing-sensitive tests elsewhere in the suite.
@Suite(.serialized) struct StateFileTests {
    @Test func writesReadsAndReplaces() throws {
        let directory = try temporaryDirectory("statefile").path
        let path = directory + "/nested/state/file"
        #expect(try StateFile.read(path) == nil)
        try StateFile.write([1, 2, 3], to: path)
        #expect(try StateFile.read(path) == [1, 2, 3])
        try StateFile.write(Array(repeating: 7, count: 10_000), to: path)
        #expect(try StateFile.read(path) == Array(repeating: 7, count: 10_000))
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"), "no temporary file left behind")
        #expect(try mode(of: path) == 0o600)
        #expect(try mode(of: directory + "/nested") == 0o700, "created directories are the owner's only")
    }

    @Test func aLeftoverTemporaryFileDoesNotWidenTheMode() throws {
        let path = try temporaryDirectory("statefile").path + "/bonds.json"
        _ = FileManager.default.createFile(atPath: path + ".tmp", contents: Data([9]), attributes: [.posixPermissions: 0o644])
        try StateFile.write([1], to: path)
        #expect(try mode(of: path) == 0o600)
        #expect(try StateFile.read(path) == [1])
    }

    @Test func failuresNameThePathAndTheReason() throws {
        let directory = try temporaryDirectory("statefile").path
        let blocker = directory + "/file"
        try StateFile.write([1], to: blocker)
        #expect(throws: StateFileError.self) { try StateFile.write([1], to: blocker + "/inside") }
        do {
            try StateFile.write([1], to: blocker + "/inside")
        } catch {
            #expect(error.description.contains(blocker))
            #expect(error.description.contains("Not a directory"))
        }
    }

    @Test(arguments: ["a/b", "/a", "a", "/a/b/", "/"])
    func directoryOfAPath(_ path: String) {
        let expected = ["a/b": "a", "/a": "/", "a": ".", "/a/b/": "/a", "/": "/"][path]
        #expect(StateFile.directoryOf(path) == expected)
    }

    /// `sudo gattway bonds clear` with the service stopped, or root running gattway by hand on
    /// the service's directory: what root creates there belongs to the directory's owner (the
    /// service's user), who must go on reading its 0600 files.
    @Test(.enabled(if: geteuid() == 0, "only root gives files away"))
    func whatRootCreatesBelongsToTheDirectorysOwner() throws {
        let directory = try temporaryDirectory("statefile").path + "/state"
        try StateFile.write([1], to: directory + "/first")
        #expect(try owner(of: directory + "/first") == [0, 0], "in root's own directory, root's")
        let nobody: UInt32 = 65534
        #expect(chown(directory, nobody, nobody) == 0)
        try StateFile.write([1, 2], to: directory + "/bonds.json")
        try StateFile.write([3], to: directory + "/nested/total")
        let lock = try StateDirectoryLock(directory: directory)
        for path in [directory + "/bonds.json", directory + "/nested", directory + "/nested/total", lock.path] {
            #expect(try owner(of: path) == [Int(nobody), Int(nobody)], "\(path)")
        }
        #expect(try mode(of: directory + "/bonds.json") == 0o600)
    }

    // MARK: One gattway per state directory

    @Test func aStateDirectoryIsLockedUntilItsLockIsGone() throws {
        let directory = try temporaryDirectory("statefile").path + "/state"
        #expect(StateDirectoryLock.holder(of: directory) == nil, "no lock file: nobody")
        var first: StateDirectoryLock? = try StateDirectoryLock(directory: directory)
        #expect(StateDirectoryLock.holder(of: directory)?.pid == getpid())
        #expect(try mode(of: directory) == 0o700, "a missing state directory is created, the owner's only")
        #expect(try StateFile.readValue(directory + "/gattway.lock") == "\(getpid())")
        // flock belongs to the open file, so a second open in this process is refused like another process.
        #expect(throws: StateDirectoryLockError.held(directory: directory, pid: getpid())) {
            try StateDirectoryLock(directory: directory)
        }
        withExtendedLifetime(first) {}
        first = nil
        // A child another test is spawning at this moment holds a copy of the descriptor until its
        // exec closes it, and the lock with it: so a few tries.
        var second: StateDirectoryLock?
        for _ in 0..<100 where second == nil {
            second = try? StateDirectoryLock(directory: directory)
            if second == nil { usleep(10_000) }
        }
        #expect(second?.path == directory + "/gattway.lock", "released when its last descriptor closes")
        second = nil
        for _ in 0..<100 where StateDirectoryLock.holder(of: directory) != nil { usleep(10_000) }
        #expect(StateDirectoryLock.holder(of: directory) == nil, "the file stays, the lock does not")
    }

    @Test func aRefusedLockSaysWhoHoldsItAndWhatToDo() {
        let error = StateDirectoryLockError.held(directory: "/var/lib/gattway", pid: 812)
        #expect(
            error.description
                == "state directory /var/lib/gattway is in use by another gattway (pid 812); stop it first, "
                + "or give this one a state_dir of its own")
    }

    @Test func aStateDirectoryThatCannotBeMadeIsNamed() throws {
        let blocker = try temporaryDirectory("statefile").path + "/file"
        try StateFile.write([1], to: blocker)
        do {
            _ = try StateDirectoryLock(directory: blocker + "/state")
            Issue.record("a lock under a regular file")
        } catch {
            #expect(error.description == "state directory: cannot create \(blocker)/state: Not a directory")
        }
    }

    // MARK: Crash consistency

    /// A counter's total file, rewritten by a child killed with SIGKILL at random moments while it
    /// writes: every kill leaves a complete total, and the total never goes backwards.
    @Test func aKilledCounterWriterLeavesACompleteTotalThatNeverGoesBack() async throws {
        let path = try temporaryDirectory("statefile").path + "/pulses.count"
        func total() throws -> UInt64? {
            guard let text = try StateFile.read(path).map({ String(decoding: $0, as: UTF8.self) }) else { return nil }
            return try #require(text.hasSuffix("\n") ? UInt64(text.dropLast()) : nil, "a torn total \"\(text)\"")
        }
        var last: UInt64 = 0
        for round in 0..<250 {
            try await runProbeAndKill(["counter", path], round: round) { _ in (try? total()).flatMap { $0 }.map { $0 > last } ?? false }
            let now = try #require(try total(), "round \(round): the file is gone")
            #expect(now > last, "round \(round): the total went from \(last) to \(now)")
            last = now
        }
    }

    /// bonds.json (up to 40 bonds, 10+ kB), rewritten through BondStore by a child killed with
    /// SIGKILL at random moments while it writes: every kill leaves a file that loads, whole (its
    /// bond count matches its generation), never an older generation.
    @Test func aKilledBondWriterLeavesALoadableFile() async throws {
        let directory = try temporaryDirectory("statefile").path
        let store = BondStore(directory: directory)
        func generation() throws -> UInt16? { try store.load().bonds.first?.clientConfigurations[1] }
        var last: UInt16 = 0
        for round in 0..<250 {
            try await runProbeAndKill(["bonds", directory], round: round) { _ in
                (try? generation()).flatMap { $0 }.map { $0 > last } ?? false
            }
            let registry = try store.load()
            let now = try #require(registry.bonds.first?.clientConfigurations[1], "round \(round): no bonds")
            #expect(registry.bonds.count == Int(now) % 40 + 1, "round \(round): a mixed file")
            #expect(now > last, "round \(round): went from \(last) to \(now)")
            last = now
        }
    }

    /// The MQTT outbox's journal, written through MQTTOutbox (appends, acknowledgements,
    /// compactions, reopening) by a child killed with SIGKILL at random moments: reopened after
    /// every kill, the outbox gives every event the child said it appended and did not say it
    /// acknowledged, in order and whole, besides at most the one step the kill interrupted.
    @Test func aKilledOutboxWriterLosesNoAppendedEvent() async throws {
        let directory = try temporaryDirectory("statefile").path
        let check = try temporaryDirectory("statefile-check")
        let quiet = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        let checkWriter = StateFileWriter()
        /// The topics the outbox holds, oldest first.
        var expected: [String] = []
        for round in 0..<200 {
            let output = try await runProbeAndKill(["outbox", directory, "\(round)"], round: round) { $0.contains("appended ") }
            var next = 0
            for line in output.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.first == "appended" {
                    expected.append(String(fields[1]))
                    next += 1
                } else if fields.first == "acknowledged" {
                    #expect(line == "acknowledged \(expected.first ?? "nothing")", "round \(round): not the oldest")
                    expected = Array(expected.dropFirst())
                }
            }
            // A copy is reopened, so the child's next run replays the journal as the kill left it.
            let journal = try #require(FileManager.default.contents(atPath: directory + "/outbox.jsonl"), "round \(round): no journal")
            try journal.write(to: check.appendingPathComponent("outbox.jsonl"))
            // Opening compacts the copy on the writer: done before the next round copies over it.
            let pending = try MQTTOutbox(directory: check, writer: checkWriter, logger: quiet).pending
            checkWriter.waitUntilIdle()
            let topics = pending.map(\.message.topic)
            #expect(
                [expected, expected + ["probe/\(round)/\(next)"], Array(expected.dropFirst())].contains(topics),
                "round \(round): the outbox holds \(topics), the child left \(expected)")
            for entry in pending {
                let whole = Array(String(repeating: entry.message.topic + ";", count: 8).utf8)
                #expect(entry.message.payload == whole, "round \(round): a torn event")
            }
            expected = topics
        }
    }

    /// bthome.counter, reserved ahead through BTHomeCounter by a child that takes counters and
    /// restarts now and then, killed with SIGKILL at random moments: every kill leaves a complete
    /// limit above every counter taken, so no run, killed or not, takes one again.
    @Test func aKilledBTHomeCounterWriterNeverReusesACounter() async throws {
        let directory = try temporaryDirectory("statefile").path
        var lastLimit: UInt32 = 0
        var lastTaken: UInt32?
        for round in 0..<200 {
            let output = try await runProbeAndKill(["bthome", directory], round: round) { $0.contains("\n") }
            let lines = output.split(separator: "\n")
            let taken = lines.compactMap { UInt32($0) }
            #expect(taken.count == lines.count, "round \(round): \(output.prefix(200))")
            let first = try #require(taken.first, "round \(round): nothing taken")
            let last = try #require(taken.last)
            #expect(zip(taken, taken.dropFirst()).allSatisfy { $0 < $1 }, "round \(round): a counter taken twice")
            if let lastTaken { #expect(first > lastTaken, "round \(round): from \(lastTaken) back to \(first)") }
            let bytes = try #require(try StateFile.read(directory + "/" + BTHomeCounter.fileName), "round \(round): no file")
            let text = String(decoding: bytes, as: UTF8.self)
            let limit = try #require(text.hasSuffix("\n") ? UInt32(text.dropLast()) : nil, "round \(round): a torn limit \"\(text)\"")
            #expect(limit > lastLimit, "round \(round): the limit went from \(lastLimit) to \(limit)")
            #expect(limit > last, "round \(round): counter \(last) was taken beyond the stored limit \(limit)")
            lastLimit = limit
            lastTaken = last
        }
    }

    /// The static random address, made through StaticAddressStore by a child killed with SIGKILL
    /// at random moments: once made, every run gets the same one, and a kill while one is being
    /// made leaves no file or the whole address.
    @Test func aKilledAddressWriterLeavesTheAddressOrNone() async throws {
        let directory = try temporaryDirectory("statefile").path
        let kept = directory + "/kept"
        var keptAddress: Substring?
        for round in 0..<200 {
            let made = directory + "/\(round)"
            let output = try await runProbeAndKill(["address", kept, made], round: round) { $0.contains("kept ") }
            let lines = output.split(separator: "\n").map { $0.split(separator: " ") }
            let address = try #require(lines.first.flatMap { $0.count == 2 && $0[0] == "kept" ? $0[1] : nil }, "round \(round)")
            #expect(address == (keptAddress ?? address), "round \(round): the kept address changed")
            keptAddress = address
            #expect(try await StaticAddressStore(directory: kept).loadOrCreate(writer: StateFileWriter()).description == address)
            for (index, line) in lines.dropFirst().enumerated() {
                try #require(line.count == 3 && line[0] == "made" && line[1] == "\(index)", "round \(round): \(line)")
                #expect(
                    try await StaticAddressStore(directory: made + "/\(index)").loadOrCreate(writer: StateFileWriter()).description
                        == line[2], "round \(round)")
            }
            let interrupted = StaticAddressStore(directory: made + "/\(lines.count - 1)")
            let stored = try StateFile.readValue(interrupted.path)
            let loaded = try await interrupted.loadOrCreate(writer: StateFileWriter())
            #expect(stored == nil || stored == loaded.description, "round \(round): \(stored ?? "")")
        }
    }

    /// The Home Assistant discovery record, rewritten through PublishedComponentsFile by a child
    /// killed with SIGKILL at random moments: every kill leaves a whole generation (its component
    /// count matches it), never an older one.
    @Test func aKilledDiscoveryRecordWriterLeavesAWholeRecord() async throws {
        let directory = try temporaryDirectory("statefile").path
        let file = PublishedComponentsFile(stateDirectory: directory, writer: StateFileWriter())
        /// The record's generation: each component is named g<generation>_<k>, as the probe names them.
        func generation() throws -> Int? {
            try file.load()?.first.flatMap { Int($0.id.dropFirst().prefix { $0 != "_" }) }
        }
        var last = 0
        for round in 0..<200 {
            try await runProbeAndKill(["discovery", directory], round: round) { _ in
                (try? generation()).flatMap { $0 }.map { $0 > last } ?? false
            }
            let components = try #require(try file.load(), "round \(round): no record")
            let now = try #require(try generation(), "round \(round): \(components)")
            #expect(components.count == now % 30 + 1, "round \(round): a torn record \(components.sorted())")
            #expect(components.allSatisfy { $0.id.hasPrefix("g\(now)_") }, "round \(round): a mixed record")
            #expect(now > last, "round \(round): went from \(last) to \(now)")
            last = now
        }
    }

    /// Starts the probe, waits until `wrote` says it has written a new version (so it is in its
    /// write loop, however long a loaded machine took to start it; `wrote` gets what it printed so
    /// far), lets it go on for a random 0–3 ms, kills it with SIGKILL and waits for it. It waits by
    /// sleeping, not by blocking a thread, so the other tests running beside it keep theirs.
    /// Returns what it printed.
    @discardableResult
    private func runProbeAndKill(_ arguments: [String], round: Int, wrote: (_ output: String) -> Bool) async throws -> String {
        let probe = ChildProcess([try builtExecutable("StateFileProbe")] + arguments)
        try probe.start()
        let deadline = ContinuousClock.now + .seconds(20)
        while !wrote(probe.stdout), probe.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .microseconds(500)) }
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3_000)))
        probe.stop(SIGKILL)
        while probe.isRunning { try await Task.sleep(for: .milliseconds(1)) }
        let status = probe.waitForExit(timeout: 10)  // its output, to the end
        #expect(
            probe.terminatingSignal == SIGKILL,
            "round \(round): the probe ended by itself (\(status.map { "status \($0)" } ?? "?")): \(probe.stderr)")
        return probe.stdout
    }

    private func owner(of path: String) throws -> [Int] {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return [
            try #require((attributes[.ownerAccountID] as? NSNumber)?.intValue),
            try #require((attributes[.groupOwnerAccountID] as? NSNumber)?.intValue)
        ]
    }

    private func mode(of path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}
