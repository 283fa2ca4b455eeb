import BluetoothCore
import BluetoothSMP
import Foundation
@testable import StateFile
import Testing
import TestHarness

@Suite struct StateFileTests {
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
            try await runProbeAndKill(["counter", path], round: round) { (try? total()).flatMap { $0 }.map { $0 > last } ?? false }
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
            try await runProbeAndKill(["bonds", directory], round: round) { (try? generation()).flatMap { $0 }.map { $0 > last } ?? false }
            let registry = try store.load()
            let now = try #require(registry.bonds.first?.clientConfigurations[1], "round \(round): no bonds")
            #expect(registry.bonds.count == Int(now) % 40 + 1, "round \(round): a mixed file")
            #expect(now > last, "round \(round): went from \(last) to \(now)")
            last = now
        }
    }

    /// Starts the probe, waits until `wrote` says it has written a new version (so it is in its
    /// write loop, however long a loaded machine took to start it), lets it go on for a random
    /// 0–3 ms, kills it with SIGKILL and waits for it. It waits by sleeping, not by blocking a
    /// thread, so the other tests running beside it keep theirs.
    private func runProbeAndKill(_ arguments: [String], round: Int, wrote: () -> Bool) async throws {
        let probe = ChildProcess([try builtExecutable("StateFileProbe")] + arguments)
        try probe.start()
        let deadline = ContinuousClock.now + .seconds(20)
        while !wrote(), probe.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .microseconds(500)) }
        try await Task.sleep(for: .microseconds(Int.random(in: 0...3_000)))
        probe.stop(SIGKILL)
        while probe.isRunning { try await Task.sleep(for: .milliseconds(1)) }
        let status = probe.waitForExit(timeout: 10)  // its output, to the end
        #expect(
            probe.terminatingSignal != nil,
            "round \(round): the probe exited by itself (\(status.map { "status \($0)" } ?? "?")): \(probe.stderr)")
    }

    private func mode(of path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}
