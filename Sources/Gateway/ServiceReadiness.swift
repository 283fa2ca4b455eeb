import BluetoothGATT
import EventLoop
import LoopClock
import Synchronization

/// What gattway tells systemd about itself, decided from the controller's state and the time
/// since start.
///
/// The BLE side is one part of the gateway, not all of it: a missing adapter, an rfkill block or
/// a busy controller must not keep the sensors and the MQTT mirror from running, nor get the
/// service killed for never reporting ready (`TimeoutStartSec=`). So READY=1 comes as soon as the
/// controller is up, or when the start-up grace runs out without it; from then on `STATUS=` says
/// whether Bluetooth is degraded, and says so again whenever the controller goes or comes back
/// (the host retries it for as long as the service runs). While up, it also says how many
/// centrals are connected. A reload is bracketed by RELOADING=1 and READY=1 (`sd_notify(3)`), so
/// `systemctl reload` and `systemctl status` see it begin and end.
struct ServiceReadiness: Sendable {
    /// The controller as configured (`hci0`, `tcp:127.0.0.1:18820`), for the status line.
    let controller: String
    private var isReady = false
    private var state = PeripheralState.unknown
    private var centrals = 0
    private var isReloading = false
    /// Why the MQTT mirror is not connected (the last attempt's failure, or how the connection
    /// ended); nil while connected, before its first attempt ends, and without MQTT.
    private var mqttDown: String?

    init(controller: String) {
        self.controller = controller
    }

    /// The controller's new state; returns the message for systemd, if any.
    mutating func controllerStateChanged(_ newState: PeripheralState) -> String? {
        let wasUp = state == .poweredOn
        state = newState
        if !isReady {
            guard newState == .poweredOn else { return nil }
            isReady = true
            return "READY=1\nSTATUS=\(status)"
        }
        return (newState == .poweredOn) != wasUp ? "STATUS=\(status)" : nil
    }

    /// The number of connected centrals changed; returns the new status once ready.
    mutating func centralsChanged(_ count: Int) -> String? {
        guard count != centrals else { return nil }
        centrals = count
        return isReady ? "STATUS=\(status)" : nil
    }

    /// The MQTT mirror connected (`down` nil) or is not connected, and why; returns the new
    /// status once ready.
    mutating func mqttChanged(down reason: String?) -> String? {
        guard reason != mqttDown else { return nil }
        mqttDown = reason
        return isReady ? "STATUS=\(status)" : nil
    }

    /// The start-up grace ran out; returns READY=1 with the degraded status when the controller
    /// did not come up in time.
    mutating func graceExpired() -> String? {
        guard !isReady else { return nil }
        isReady = true
        return "READY=1\nSTATUS=\(status)"
    }

    /// A reload begins: RELOADING=1 with when, on CLOCK_MONOTONIC in microseconds (systemd
    /// matches the reload by it). Nothing before READY=1: systemd is still waiting for the start.
    mutating func reloadStarted(monotonicMicroseconds: UInt64) -> String? {
        guard isReady else { return nil }
        isReloading = true
        return "RELOADING=1\nMONOTONIC_USEC=\(monotonicMicroseconds)"
    }

    /// The reload is over (applied or rejected): READY=1 again, with the status.
    mutating func reloadFinished() -> String? {
        guard isReloading else { return nil }
        isReloading = false
        return "READY=1\nSTATUS=\(status)"
    }

    /// `running` (with the connected centrals), or what is degraded and what still runs; an MQTT
    /// mirror that is not connected is named with why.
    var status: String {
        let mqtt = mqttDown.map { "MQTT: \($0)" }
        if state == .poweredOn {
            let running =
                switch centrals {
                case 0: "running"
                case 1: "running, 1 central connected"
                default: "running, \(centrals) centrals connected"
                }
            return mqtt.map { "\(running); degraded: \($0)" } ?? running
        }
        let why: String =
            switch state {
            case .unsupported: "not found"
            case .unauthorized: "not allowed (needs CAP_NET_ADMIN)"
            case .poweredOff: "powered off or blocked by rfkill"
            case .resetting: "unreachable or busy"
            case .unknown, .poweredOn: "not up yet"
            }
        let bluetooth = "degraded: Bluetooth controller \(controller) \(why), retrying"
        return mqtt.map { "\(bluetooth); \($0); sensors running" } ?? "\(bluetooth); sensors and MQTT running"
    }
}

/// `ServiceReadiness` shared by the task that follows the host's events, the MQTT mirror and the
/// one that waits out the start-up grace; sends what it decides to systemd. Status changes of
/// connections (centrals, the broker) are sent at most once per `minimumStatusInterval` (the
/// latest one, when the interval is over): a burst of centrals coming and going must not flood
/// systemd.
final class ReadinessReporter: Sendable {
    static let minimumStatusInterval = Duration.seconds(1)

    private let systemd: SystemdNotifier
    private let readiness: Mutex<ServiceReadiness>
    private let sending = Mutex(Sending())

    private struct Sending {
        var last: LoopInstant?
        /// Sends the status when the interval is over, while one waits (made at the first).
        var deferred: DeadlineTimer?
        var waiting = false
    }

    init(systemd: SystemdNotifier, controller: String) {
        self.systemd = systemd
        readiness = Mutex(ServiceReadiness(controller: controller))
    }

    func controllerStateChanged(_ state: PeripheralState) {
        if let message = readiness.withLock({ $0.controllerStateChanged(state) }) { send(message) }
    }

    func centralsChanged(_ count: Int) {
        guard readiness.withLock({ $0.centralsChanged(count) }) != nil else { return }
        sendStatusAtMostOncePerInterval()
    }

    /// See `ServiceReadiness.mqttChanged`.
    func mqttChanged(down reason: String?) {
        guard readiness.withLock({ $0.mqttChanged(down: reason) }) != nil else { return }
        sendStatusAtMostOncePerInterval()
    }

    private func sendStatusAtMostOncePerInterval() {
        let now = EventLoop.now()
        let sendsNow = sending.withLock { sending in
            if let last = sending.last, now - last < Self.minimumStatusInterval {
                if !sending.waiting {
                    sending.waiting = true
                    if sending.deferred == nil {
                        sending.deferred = DeadlineTimer { [weak self] _ in self?.sendDeferredStatus() }
                    }
                    sending.deferred?.schedule(at: last + Self.minimumStatusInterval)
                }
                return false
            }
            sending.last = now
            return true
        }
        if sendsNow { systemd.send("STATUS=" + readiness.withLock { $0.status }) }
    }

    /// Waits `grace`, then reports ready (degraded) unless the controller came up meanwhile.
    func expireGrace(after grace: Duration) async {
        guard (try? await Task.sleep(for: grace)) != nil else { return }
        if let message = readiness.withLock({ $0.graceExpired() }) { send(message) }
    }

    /// See `ServiceReadiness.reloadStarted`.
    func reloadStarted() {
        let microseconds = EventLoop.now().nanoseconds / 1000
        if let message = readiness.withLock({ $0.reloadStarted(monotonicMicroseconds: microseconds) }) { send(message) }
    }

    func reloadFinished() {
        if let message = readiness.withLock({ $0.reloadFinished() }) { send(message) }
    }

    private func sendDeferredStatus() {
        sending.withLock { $0.waiting = false }
        send("STATUS=" + readiness.withLock { $0.status })
    }

    private func send(_ message: String) {
        sending.withLock { $0.last = EventLoop.now() }
        systemd.send(message)
    }
}
