#if canImport(Glibc)
import Glibc
#endif

/// systemd's watchdog (`WatchdogSec=`): WATCHDOG=1 every half period, sent only after each of
/// `probes` answered — one call into each actor that does the gateway's work (the host, the value
/// pipeline). A timer alone would keep beating while the work is stuck; this beats only while
/// the work's own executors take new jobs, so a hung actor stops the beat and systemd restarts
/// the service.
public struct ServiceWatchdog: Sendable {
    let interval: Duration
    let probes: [@Sendable () async -> Void]
    let systemd: SystemdNotifier

    /// Half of `WATCHDOG_USEC`, when systemd asks this process (`WATCHDOG_PID` absent or ours)
    /// for keep-alives; nil otherwise.
    public static func interval(environment: [String: String], pid: Int32 = getpid()) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0 else { return nil }
        if let owner = environment["WATCHDOG_PID"], Int32(owner) != pid { return nil }
        return .microseconds(microseconds / 2)
    }

    /// Beats until cancelled.
    func run() async {
        while !Task.isCancelled {
            guard (try? await Task.sleep(for: interval)) != nil else { return }
            for probe in probes { await probe() }
            systemd.send("WATCHDOG=1")
        }
    }
}
