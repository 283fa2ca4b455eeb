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
        #expect(readiness.controllerStateChanged(.resetting)
                == "STATUS=degraded: Bluetooth controller hci0 unreachable or busy, retrying; sensors and MQTT running")
        #expect(readiness.controllerStateChanged(.unsupported) == nil, "still degraded: said once")
        #expect(readiness.controllerStateChanged(.poweredOn) == "STATUS=running")
    }

    @Test(arguments: [
        (PeripheralState.unknown, "not up yet"), (.unsupported, "not found"),
        (.unauthorized, "not allowed (needs CAP_NET_ADMIN)"), (.poweredOff, "powered off or blocked by rfkill"),
        (.resetting, "unreachable or busy"),
    ])
    func withoutAControllerTheGraceMakesItReadyAndDegraded(_ state: PeripheralState, _ why: String) {
        var readiness = ServiceReadiness(controller: "tcp:127.0.0.1:9")
        _ = readiness.controllerStateChanged(state)
        #expect(readiness.graceExpired()
                == "READY=1\nSTATUS=degraded: Bluetooth controller tcp:127.0.0.1:9 \(why), retrying; sensors and MQTT running")
        #expect(readiness.controllerStateChanged(.poweredOn) == "STATUS=running")
    }
}
