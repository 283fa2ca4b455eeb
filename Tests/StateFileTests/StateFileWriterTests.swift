import Foundation
import Synchronization
import TestHarness
import Testing

@testable import StateFile

/// The state files' writer thread: a write returns at once whatever the disk does, the newest
/// bytes of a file win, and every caller hears how its write ended.
struct StateFileWriterTests {
    /// With a disk that takes 200 ms a write (an injected delay), handing over a write takes no
    /// time, five writes to one file while the first waits become one write of the newest bytes,
    /// and all five completions are called.
    @Test func writesReturnAtOnceAndTheNewestBytesWin() async throws {
        let writer = StateFileWriter(delayBeforeEachWrite: .milliseconds(200))
        let path = try temporaryDirectory("writer").appendingPathComponent("total").path
        let completions = Mutex(0)
        let start = ContinuousClock.now
        for n in 1...5 {
            writer.write(Array("\(n)\n".utf8), to: path) { error in
                #expect(error == nil)
                completions.withLock { $0 += 1 }
            }
        }
        let handingOver = ContinuousClock.now - start
        #expect(handingOver < .milliseconds(50), "five writes took \(handingOver) to hand over")
        #expect(try StateFile.read(path) == nil, "not written yet: the disk is slow")
        await writer.idle()
        #expect(try StateFile.readValue(path) == "5")
        #expect(completions.withLock { $0 } == 5)
    }

    /// A write that fails reports the error to its completion.
    @Test func aFailedWriteReportsItsError() async throws {
        let writer = StateFileWriter()
        let file = try temporaryDirectory("writer").appendingPathComponent("file")
        try "x".write(to: file, atomically: true, encoding: .utf8)
        let failure = Mutex<StateFileError?>(nil)
        writer.write([1], to: file.path + "/under-a-file") { error in failure.withLock { $0 = error } }
        await writer.idle()
        #expect(failure.withLock { $0 }?.errno == ENOTDIR)
    }
}
