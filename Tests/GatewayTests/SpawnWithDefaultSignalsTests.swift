import DevelopmentHarness
import Foundation
import Testing

/// How the demo starts its helpers and the tests start theirs.
struct SpawnWithDefaultSignalsTests {
    /// A pipe made without close-on-exec (as Foundation's `Pipe` makes them) for another child must
    /// not stay open in this one: the other child's reader would see end of file only when this
    /// one exits. (A full test run starts children from many threads at once.)
    @Test func theChildKeepsNoDescriptorOfTheParentBeyondItsStandardThree() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let child = try spawnWithDefaultSignals(["/bin/sleep", "5"])
        defer {
            kill(child, SIGKILL)
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
        close(ends[1])
        // End of file at once: nobody else holds the write end.
        var poll = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        #expect(Glibc.poll(&poll, 1, 2_000) == 1, "the sleeping child holds the pipe's write end")
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) == 0)
    }
}
