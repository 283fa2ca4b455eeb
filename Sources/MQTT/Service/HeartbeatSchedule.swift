import EventLoop
import LoopClock

/// When the mirror's next heartbeat check is due (`Mirror.nextHeartbeatCheck`): one loop timer,
/// re-armed after each check, running while the service runs.
struct HeartbeatSchedule {
    private var timer: DeadlineTimer?

    var isRunning: Bool { timer != nil }

    /// `due` runs on the event loop when a check is due.
    mutating func start(due: @escaping @Sendable () -> Void) {
        timer = DeadlineTimer { _ in due() }
    }

    /// Arms the timer for `check`; nothing for nil (no characteristic has a heartbeat) or once stopped.
    func schedule(_ check: LoopInstant?) {
        timer?.schedule(at: check)
    }

    mutating func stop() {
        timer?.cancel()
        timer = nil
    }
}
