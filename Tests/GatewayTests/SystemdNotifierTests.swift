import BluetoothGATT
import Glibc
import Synchronization
import TestHarness
import Testing

@testable import EventLoop
@testable import Gateway

@Suite struct SystemdNotifierTests {
    /// A datagram socket where systemd's would be receives what the notifier sends, as one datagram.
    @Test func sendsReadyAndStatusAsOneDatagram() throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path])
        #expect(notifier.send("READY=1\nSTATUS=advertising on hci0"))
        #expect(socket.receive(timeout: 1) == "READY=1\nSTATUS=advertising on hci0")
    }

    @Test func withoutNotifySocketNothingIsSent() {
        #expect(SystemdNotifier(environment: [:]).send("READY=1") == false)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]).send("READY=1") == false)
    }
}

/// READY=1 and STATUS= as the controller comes, goes, or never comes (`ServiceReadiness`).
@Suite struct ServiceReadinessTests {
    @Test func aControllerThatComesUpMakesItReadyAndRunning() {
        var readiness = ServiceReadiness(controller: "hci0")
        #expect(readiness.controllerStateChanged(.resetting) == nil, "not ready before the grace runs out")
        #expect(readiness.controllerStateChanged(.poweredOn) == "READY=1\nSTATUS=running")
        #expect(readiness.graceExpired() == nil, "ready once")
        #expect(
            readiness.controllerStateChanged(.resetting)
                == "STATUS=degraded: Bluetooth controller hci0 unreachable or busy, retrying; sensors and MQTT running")
        #expect(readiness.controllerStateChanged(.unsupported) == nil, "still degraded: said once")
        #expect(readiness.controllerStateChanged(.poweredOn) == "STATUS=running")
    }

    @Test func whileUpTheStatusCountsTheConnectedCentrals() {
        var readiness = ServiceReadiness(controller: "hci0")
        #expect(readiness.centralsChanged(1) == nil, "nothing before READY=1")
        #expect(readiness.controllerStateChanged(.poweredOn) == "READY=1\nSTATUS=running, 1 central connected")
        #expect(readiness.centralsChanged(1) == nil, "no change, no message")
        #expect(readiness.centralsChanged(3) == "STATUS=running, 3 centrals connected")
        #expect(readiness.centralsChanged(0) == "STATUS=running")
    }

    /// A broker that cannot be reached, or is lost, is named with why in STATUS=, beside the
    /// controller's part, until the mirror connects again.
    @Test func anMQTTMirrorThatIsNotConnectedIsNamedWithWhy() {
        var readiness = ServiceReadiness(controller: "hci0")
        let refused = "cannot connect to MQTT broker at 127.0.0.1:9: connection refused; retrying"
        #expect(readiness.mqttChanged(down: refused) == nil, "nothing before READY=1")
        #expect(
            readiness.controllerStateChanged(.poweredOn)
                == "READY=1\nSTATUS=running; degraded: MQTT: \(refused)")
        #expect(readiness.mqttChanged(down: refused) == nil, "no change, no message")
        #expect(readiness.centralsChanged(1) == "STATUS=running, 1 central connected; degraded: MQTT: \(refused)")
        #expect(readiness.mqttChanged(down: nil) == "STATUS=running, 1 central connected")
        #expect(readiness.mqttChanged(down: nil) == nil)
        #expect(
            readiness.mqttChanged(down: "connection lost; reconnecting")
                == "STATUS=running, 1 central connected; degraded: MQTT: connection lost; reconnecting")
        #expect(
            readiness.controllerStateChanged(.poweredOff)
                == "STATUS=degraded: Bluetooth controller hci0 powered off or blocked by rfkill, retrying; "
                + "MQTT: connection lost; reconnecting; sensors running")
    }

    /// A reload is bracketed by RELOADING=1 (with its monotonic time) and READY=1 once the
    /// service is ready; before, systemd still waits for the start and hears nothing of it.
    @Test func aReloadIsBracketedByReloadingAndReady() {
        var readiness = ServiceReadiness(controller: "hci0")
        #expect(readiness.reloadStarted(monotonicMicroseconds: 5) == nil)
        #expect(readiness.reloadFinished() == nil)
        _ = readiness.controllerStateChanged(.poweredOn)
        #expect(readiness.reloadStarted(monotonicMicroseconds: 1_234_567) == "RELOADING=1\nMONOTONIC_USEC=1234567")
        #expect(readiness.reloadFinished() == "READY=1\nSTATUS=running")
        #expect(readiness.reloadFinished() == nil, "one READY=1 per reload")
    }

    /// Connections coming and going in a burst give one STATUS= at once and then at most one per
    /// second, the latest.
    @Test func statusChangesAreRateLimited() async throws {
        let socket = try NotifySocket()
        let reporter = ReadinessReporter(systemd: SystemdNotifier(socketPath: socket.path), controller: "hci0")
        reporter.controllerStateChanged(.poweredOn)
        #expect(await socket.next(within: .seconds(5)) == "READY=1\nSTATUS=running")
        let start = ContinuousClock.now
        for count in [1, 2, 3, 2] { reporter.centralsChanged(count) }
        #expect(await socket.next(within: .seconds(5)) == "STATUS=running, 2 centrals connected")
        #expect(ContinuousClock.now - start >= .milliseconds(900), "held back for the rest of the second")
        #expect(await socket.next(within: .milliseconds(1500)) == nil, "one message for the burst")
        try await Task.sleep(for: .seconds(1))
        reporter.centralsChanged(0)
        #expect(await socket.next(within: .milliseconds(500)) == "STATUS=running", "after a quiet second, at once")
    }

    @Test(arguments: [
        (PeripheralState.unknown, "not up yet"), (.unsupported, "not found"),
        (.unauthorized, "not allowed (needs CAP_NET_ADMIN)"), (.poweredOff, "powered off or blocked by rfkill"),
        (.resetting, "unreachable or busy")
    ])
    func withoutAControllerTheGraceMakesItReadyAndDegraded(_ state: PeripheralState, _ why: String) {
        var readiness = ServiceReadiness(controller: "tcp:127.0.0.1:9")
        _ = readiness.controllerStateChanged(state)
        #expect(
            readiness.graceExpired()
                == "READY=1\nSTATUS=degraded: Bluetooth controller tcp:127.0.0.1:9 \(why), retrying; sensors and MQTT running")
        #expect(readiness.controllerStateChanged(.poweredOn) == "STATUS=running")
    }
}

/// WATCHDOG=1 only while the event loop doing the work turns (`ServiceWatchdog`).
@Suite struct ServiceWatchdogTests {
    @Test func theIntervalIsHalfOfWhatSystemdAsksForThisProcess() {
        #expect(ServiceWatchdog.interval(environment: ["WATCHDOG_USEC": "30000000"], pid: 42) == .seconds(15))
        #expect(ServiceWatchdog.interval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"], pid: 42) == .seconds(15))
        #expect(
            ServiceWatchdog.interval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], pid: 42) == nil,
            "another process's watchdog")
        #expect(ServiceWatchdog.interval(environment: [:], pid: 42) == nil)
        #expect(ServiceWatchdog.interval(environment: ["WATCHDOG_USEC": "0"], pid: 42) == nil)
    }

    /// The beat comes from the loop that runs the work: while a handler holds the loop's thread
    /// (here a closure that sleeps on it, as a hung handler would block), no WATCHDOG=1 arrives;
    /// once the loop turns again, the beat comes back. A loop of the test's own, so freezing it
    /// stalls no other test.
    @Test func aFrozenLoopStopsTheBeat() async throws {
        let socket = try NotifySocket()
        let loop = EventLoop()
        let watchdog = ServiceWatchdog(
            interval: .milliseconds(50), systemd: SystemdNotifier(socketPath: socket.path), loop: loop)
        watchdog.start()
        defer { watchdog.stop() }
        // Generous waits: on a loaded machine the loop's thread waits for a core too.
        #expect(await socket.next(within: .seconds(20)) == "WATCHDOG=1", "beats while the loop turns")
        #expect(await socket.next(within: .seconds(20)) == "WATCHDOG=1")

        let frozen = Mutex(true)
        loop.execute {
            while frozen.withLock({ $0 }) { usleep(10_000) }
        }
        // A beat already sent before the freeze took the thread may still be queued.
        while await socket.next(within: .milliseconds(200)) != nil {}
        #expect(await socket.next(within: .seconds(1)) == nil, "no WATCHDOG=1 for 1 s (20 periods) while the loop is frozen")
        frozen.withLock { $0 = false }
        #expect(await socket.next(within: .seconds(20)) == "WATCHDOG=1", "and it beats again once the loop turns")
    }
}
