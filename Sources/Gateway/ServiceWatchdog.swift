import EventLoop

#if canImport(Glibc)
import Glibc
#endif

/// systemd's watchdog (`WatchdogSec=`): WATCHDOG=1 every half period, sent by a timer of the event
/// loop that does the gateway's work (every descriptor handler, timer and actor of the event
/// path runs on that one thread). A timer on a thread of its own would keep beating while the
/// work is stuck; this one fires only when the loop comes back to its timers, so a loop blocked
/// in a handler, or spinning in one, stops the beat and systemd restarts the service.
public final class ServiceWatchdog: Sendable {
    private let interval: Duration
    private let systemd: SystemdNotifier
    private let timer: EventLoop.Timer

    /// Beats on `loop` (the process's: `EventLoop.shared`) once `start()` is called.
    public init(interval: Duration, systemd: SystemdNotifier, loop: EventLoop = .shared) {
        self.interval = interval
        self.systemd = systemd
        // The timer's body re-arms it through this box: the timer cannot name itself when made.
        let rearm = BackReference<EventLoop.Timer>()
        timer = loop.makeTimer {
            systemd.send("WATCHDOG=1")
            rearm.target?.arm(after: interval)
        }
        rearm.target = timer
    }

    /// Half of `WATCHDOG_USEC`, when systemd asks this process (`WATCHDOG_PID` absent or ours)
    /// for keep-alives; nil otherwise.
    public static func interval(environment: [String: String], pid: Int32 = getpid()) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], Int32(owner) != pid { return nil }
        return .microseconds(microseconds / 2)
    }

    /// The first beat after one interval, then one every interval while the loop turns.
    public func start() { timer.arm(after: interval) }

    public func stop() { timer.disarm() }
}
