import Synchronization
import Testing

@testable import EventLoop

/// Jobs chained one after the other: each starts only once the one before it has ended, on the
/// loop, and `idle()` waits for all of them.
struct SerialTasksTests {
    /// What the jobs did, in order.
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])

        func record(_ entry: String) { entries.withLock { $0.append(entry) } }
        var recorded: [String] { entries.withLock { $0 } }
    }

    @Test func aLaterShorterJobEndsAfterTheOneBefore() async {
        let log = Log()
        var tasks = SerialTasks()
        tasks.enqueue {
            try? await Task.sleep(for: .milliseconds(50))
            log.record("long")
        }
        tasks.enqueue { log.record("short") }
        await tasks.idle()
        #expect(log.recorded == ["long", "short"])
    }

    @Test func noJobStartsBeforeTheOneBeforeEnded() async {
        let log = Log()
        var tasks = SerialTasks()
        for (job, milliseconds) in [(1, 30), (2, 10), (3, 0)] {
            tasks.enqueue {
                log.record("start \(job)")
                try? await Task.sleep(for: .milliseconds(milliseconds))
                await Task.yield()
                log.record("end \(job)")
            }
        }
        await tasks.idle()
        #expect(log.recorded == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"])
    }

    @Test func idleWaitsForEveryJobEnqueuedSoFar() async {
        let log = Log()
        var tasks = SerialTasks()
        await tasks.idle()
        #expect(log.recorded.isEmpty, "nothing enqueued: idle at once")
        for job in 1...3 {
            tasks.enqueue {
                try? await Task.sleep(for: .milliseconds(10))
                log.record("\(job)")
            }
        }
        await tasks.idle()
        #expect(log.recorded == ["1", "2", "3"])
        tasks.enqueue { log.record("4") }
        await tasks.idle()
        #expect(log.recorded == ["1", "2", "3", "4"], "and for one enqueued after it was idle")
    }

    @Test func jobsRunOnTheLoop() async {
        let other = EventLoop()
        let onLoops = Mutex<[Bool]>([])
        var tasks = SerialTasks(on: other)
        tasks.enqueue { onLoops.withLock { $0.append(other.inLoop) } }
        tasks.enqueue {
            await Task.yield()
            onLoops.withLock { $0.append(other.inLoop) }
        }
        await tasks.idle()
        #expect(onLoops.withLock { $0 } == [true, true])
    }
}
