import BluetoothGATT
import Synchronization

/// What gattway tells systemd about itself, decided from the controller's state and the time
/// since start.
///
/// The BLE side is one part of the gateway, not all of it: a missing adapter, an rfkill block or
/// a busy controller must not keep the sensors and the MQTT mirror from running, nor get the
/// service killed for never reporting ready (`TimeoutStartSec=`). So READY=1 comes as soon as the
/// controller is up, or when the start-up grace runs out without it; from then on `STATUS=` says
/// whether Bluetooth is degraded, and says so again whenever the controller goes or comes back
/// (the host retries it for as long as the service runs).
struct ServiceReadiness: Sendable {
    /// The controller as configured (`hci0`, `tcp:127.0.0.1:18820`), for the status line.
    let controller: String
    private var isReady = false
    private var state = PeripheralState.unknown

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

    /// The start-up grace ran out; returns READY=1 with the degraded status when the controller
    /// did not come up in time.
    mutating func graceExpired() -> String? {
        guard !isReady else { return nil }
        isReady = true
        return "READY=1\nSTATUS=\(status)"
    }

    /// `running`, or what is degraded and what still runs.
    var status: String {
        if state == .poweredOn { return "running" }
        let why: String =
            switch state {
            case .unsupported: "not found"
            case .unauthorized: "not allowed (needs CAP_NET_ADMIN)"
            case .poweredOff: "powered off or blocked by rfkill"
            case .resetting: "unreachable or busy"
            case .unknown, .poweredOn: "not up yet"
            }
        return "degraded: Bluetooth controller \(controller) \(why), retrying; sensors and MQTT running"
    }
}

/// `ServiceReadiness` shared by the task that follows the host's events and the one that waits
/// out the start-up grace; sends what it decides to systemd.
final class ReadinessReporter: Sendable {
    private let systemd: SystemdNotifier
    private let readiness: Mutex<ServiceReadiness>

    init(systemd: SystemdNotifier, controller: String) {
        self.systemd = systemd
        readiness = Mutex(ServiceReadiness(controller: controller))
    }

    func controllerStateChanged(_ state: PeripheralState) {
        if let message = readiness.withLock({ $0.controllerStateChanged(state) }) { systemd.send(message) }
    }

    /// Waits `grace`, then reports ready (degraded) unless the controller came up meanwhile.
    func expireGrace(after grace: Duration) async {
        guard (try? await Task.sleep(for: grace)) != nil else { return }
        if let message = readiness.withLock({ $0.graceExpired() }) { systemd.send(message) }
    }
}
