import Foundation
import TestHarness
import Testing

/// The control socket through the executables: `gattway status` and `gattway bonds` ask the
/// running `gattway run` (Bumble phones connected, paired) and fall back to the state directory's
/// files only when it is not running; systemd's STATUS= follows the connected centrals.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct ControlSocketEndToEndTests {
    static let uuidSuffix = "E50E24DC0016"
    static let config = GatewayRig.binarySensorConfig(
        device: "control", service: "door", name: "open", uuidSuffix: uuidSuffix)
    static let characteristicUUID = "6E400002-B5A3-F393-E0A9-\(uuidSuffix)"

    /// `gattway` with `arguments` to its end; its status and output.
    static func gattway(_ arguments: [String]) async throws -> (status: Int32?, stdout: String, stderr: String) {
        try await GattwayProcess(arguments).runToCompletion()
    }

    /// The JSON status of the service running on `configPath`.
    static func status(_ configPath: String) async throws -> [String: Any] {
        let result = try await gattway(["status", "--config", configPath, "--json"])
        try #require(result.status == 0, "gattway status: \(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func statusShowsAConnectedPhoneWithItsMTUAndSubscriptionAndSystemdHearsOfIt() async throws {
        let notify = try NotifySocket()
        let rig = try await GatewayRig(
            config: Self.config, advertisedName: "control", environment: ["NOTIFY_SOCKET": notify.path])
        defer { rig.stop() }
        #expect(await notify.next(within: .seconds(10)) == "READY=1\nSTATUS=running")

        let (phone, _) = try await rig.connectedPhone(mtu: 247)
        #expect(await notify.next(within: .seconds(10)) == "STATUS=running, 1 central connected")
        let handle = try await phone.valueHandle(of: Self.characteristicUUID)
        try await phone.expect("subscribe", ["handle": handle])

        var central: [String: Any] = [:]
        var status: [String: Any] = [:]
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            status = try await Self.status(rig.configPath)
            central = (status["centrals"] as? [[String: Any]])?.first ?? [:]
            if (central["subscriptions"] as? [String])?.isEmpty == false { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(status["state"] as? String == "poweredOn")
        #expect(status["controller"] as? String == rig.hci)
        #expect((status["centrals"] as? [Any])?.count == 1)
        #expect(central["address"] as? String == phone.address)
        #expect(central["mtu"] as? Int == 247)
        #expect(central["security"] as? String == "none")
        #expect(central["bonded"] as? Bool == false)
        #expect(central["subscriptions"] as? [String] == ["door/open notify"])
        let sensors = status["sensors"] as? [[String: Any]] ?? []
        #expect(sensors.first?["id"] as? String == "open")
        let values = sensors.first?["values"] as? [[String: Any]] ?? []
        #expect(values.first?["characteristic"] as? String == "door/open")
        #expect(values.first?["value"] as? String == "true", "the line is held at 1")
        #expect((status["counters"] as? [String: Int])?["centrals"] == 1)

        let text = try await Self.gattway(["status", "--config", rig.configPath])
        #expect(text.status == 0)
        #expect(text.stdout.contains("\(phone.address) MTU 247, security none; door/open notify"), "\(text.stdout)")
        #expect(text.stdout.contains("open: door/open = true"), "\(text.stdout)")
        #expect(text.stdout.hasSuffix("\nmqtt off\n"), "no mqtt section: \(text.stdout)")
        #expect(status["mqtt"] == nil)

        // Another configuration with the same runtime_dir is refused, never answered for.
        let other = rig.directory.appendingPathComponent("other.yaml").path
        try "state_dir: \(rig.directory.path)/other\nruntime_dir: \(rig.directory.path)/run\n"
            .write(toFile: other, atomically: true, encoding: .utf8)
        for command in [["status"], ["bonds", "list"]] {
            let refused = try await Self.gattway(command + ["--config", other])
            #expect(refused.status == 1)
            #expect(
                refused.stderr.contains(
                    "the gattway answering here serves state_dir \(rig.directory.path)/state, not \(rig.directory.path)/other"),
                "\(refused.stderr)")
        }

        try await phone.expect("disconnect")
        #expect(await notify.next(within: .seconds(10)) == "STATUS=running")
        #expect(rig.stop() == 0)
        let stopped = try await Self.gattway(["status", "--config", rig.configPath])
        #expect(stopped.status == 1)
        #expect(stopped.stderr.contains("gattway is not running (nothing answers on "), "\(stopped.stderr)")
    }

    /// Two phones bond; one bond is removed while the service runs. The service then rewrites
    /// its bond file (the other phone's subscription is saved in its bond): the removed bond must
    /// not come back, neither in the file once the service stopped nor after a restart. Editing
    /// the file under the running service, as `bonds remove` once did, loses exactly this.
    @Test func aBondRemovedWhileRunningStaysRemovedAfterARestart() async throws {
        let rig = try await GatewayRig(config: Self.config, advertisedName: "control")
        defer { rig.stop() }
        let (removed, _) = try await rig.connectedPhone()
        let (kept, _) = try await rig.connectedPhone()
        for phone in [removed, kept] {
            let paired = try await phone.expect("pair", ["io": "no_input_no_output", "mitm": false])
            #expect(paired["bonded"] as? Bool == true)
        }
        let list = ["bonds", "list", "--config", rig.configPath]
        let before = try await Self.gattway(list)
        #expect(before.stdout.contains(removed.address) && before.stdout.contains(kept.address), "\(before)")

        let removal = try await Self.gattway(["bonds", "remove", removed.address, "--config", rig.configPath])
        #expect(removal.status == 0, "\(removal.stderr)")
        #expect(removal.stdout == "removed the bond of \(removed.address)\n")
        let unknown = try await Self.gattway(["bonds", "remove", removed.address, "--config", rig.configPath])
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "no bond for \(removed.address)\n", "the running service answers: it has no such bond")

        // The kept phone's subscription goes into its bond and the service rewrites bonds.json.
        let handle = try await kept.valueHandle(of: Self.characteristicUUID)
        try await kept.expect("subscribe", ["handle": handle])
        var running = ""
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            running = try await Self.gattway(list).stdout
            if running.contains("\(kept.address) (random)"), running.contains("1 subscriptions") { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(running.contains("1 subscriptions"), "the kept bond saved its subscription: \(running)")
        #expect(!running.contains(removed.address))
        let file = try String(contentsOfFile: rig.directory.appendingPathComponent("state/bonds.json").path, encoding: .utf8)
        #expect(file.contains(kept.address) && !file.contains(removed.address), "\(file)")

        #expect(rig.stop() == 0)
        let stopped = try await Self.gattway(list)
        #expect(stopped.stdout.contains(kept.address) && !stopped.stdout.contains(removed.address), "from the file: \(stopped)")

        let restarted = GattwayProcess(["run", "--config", rig.configPath, "--hci", "tcp:127.0.0.1:9"])
        try restarted.start()
        defer { restarted.stop() }
        #expect(restarted.wait(timeout: 20) { _, stderr, _ in stderr.contains("INFO gattway: control socket ") })
        let afterRestart = try await Self.gattway(list)
        #expect(afterRestart.stdout.contains(kept.address) && !afterRestart.stdout.contains(removed.address), "\(afterRestart)")
        let cleared = try await Self.gattway(["bonds", "clear", "--config", rig.configPath])
        #expect(cleared.stdout == "removed 1 bonds\n", "the restarted service cleared its one bond: \(cleared)")
        #expect(try await Self.gattway(list).stdout.contains("no bonded centrals"))
    }
}
