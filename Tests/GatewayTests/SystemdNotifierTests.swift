import BluetoothGATT
import Testing
import TestHarness
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

/// WATCHDOG=1 only while the actors doing the work answer (`ServiceWatchdog`).
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

    @Test func itBeatsWhileTheWorkAnswers() async throws {
        let socket = try NotifySocket()
        let watchdog = ServiceWatchdog(
            interval: .milliseconds(50), probes: [{}, {}],
            systemd: SystemdNotifier(socketPath: socket.path))
        let task = Task { await watchdog.run() }
        defer { task.cancel() }
        // Generous waits: on a loaded machine the beat's own tasks wait for a thread too.
        #expect(await socket.next(within: .seconds(20)) == "WATCHDOG=1")
        #expect(await socket.next(within: .seconds(20)) == "WATCHDOG=1")
    }

    /// A probe that never answers (the actor it calls is stuck) stops the beat, although the
    /// watchdog's own timer keeps running.
    @Test func aStuckActorStopsTheBeat() async throws {
        let socket = try NotifySocket()
        let stuck = StuckActor()
        let watchdog = ServiceWatchdog(
            interval: .milliseconds(50), probes: [{ await stuck.answer() }],
            systemd: SystemdNotifier(socketPath: socket.path))
        let task = Task { await watchdog.run() }
        #expect(await socket.next(within: .seconds(1)) == nil, "no WATCHDOG=1 while the actor is stuck")
        await stuck.release()
        #expect(await socket.next(within: .seconds(20)) == "WATCHDOG=1", "and it beats again once the actor answers")
        task.cancel()
    }
}

/// An actor whose `answer()` waits until `release()`, like one whose executor is stuck.
private actor StuckActor {
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var released = false
    func answer() async {
        guard !released else { return }
        await withCheckedContinuation { waiting.append($0) }
    }
    func release() {
        released = true
        for continuation in waiting { continuation.resume() }
        waiting = []
    }
}
