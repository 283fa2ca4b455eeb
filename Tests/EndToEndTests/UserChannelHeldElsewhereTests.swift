import Foundation
import TestHarness
import Testing

/// On a real kernel adapter (the VM stage, Tests/vm/hci-user-channel-tests.sh): another program
/// holds hciN's user channel (Tests/harness/hold_user_channel.py), so the kernel refuses
/// gattway (HCIDEVDOWN answers EBUSY while a user channel is held). gattway says who is in the way and what to do, runs degraded
/// (READY=1 with a STATUS= saying so), and takes the adapter as soon as the other program lets go.
@Suite(
    .serialized, .timeLimit(.minutes(3)),
    .enabled(
        if: ProcessInfo.processInfo.environment["GATTWAY_E2E_TRANSPORT"] == "vhci",
        "needs a kernel adapter through /dev/vhci: the VM stage (Tests/vm/hci-user-channel-tests.sh)"))
struct UserChannelHeldElsewhereTests {
    @Test func aSecondHolderOfTheUserChannelIsExplainedAndGattwayTakesOverWhenItLetsGo() async throws {
        let controller = try await VirtualController(extraArguments: ["--vhci", "/dev/vhci"])
        defer { controller.stop() }
        let adapter = try #require(controller.kernelAdapter, "no kernel adapter; see \(controller.logPath)")
        let holder = ChildProcess([try Harness.python(), Harness.directory + "/hold_user_channel.py", "\(adapter)"])
        try holder.start()
        defer { holder.stop() }
        try #require(
            holder.wait(timeout: 20) { stdout, _, finished in finished || stdout.contains("holding hci\(adapter)") }
                && holder.stdout.contains("holding"), "the holder: \(holder.stderr)")

        let directory = try temporaryDirectory("held")
        let configPath = directory.appendingPathComponent("gattway.yaml").path
        try """
        gpio: {backend: simulated}
        state_dir: \(directory.appendingPathComponent("state").path)
        runtime_dir: \(directory.appendingPathComponent("run").path)
        """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let notify = try NotifySocket()
        let gattway = GattwayProcess(
            ["run", "--config", configPath, "--hci", "hci\(adapter)"], environment: ["NOTIFY_SOCKET": notify.path])
        try gattway.start()
        defer { gattway.stop() }
        // The kernel refuses gattway's HCIDEVDOWN with EBUSY while the holder has the channel.
        let explained =
            "ERROR gattway: cannot open the controller at hci\(adapter): bringing hci\(adapter) down failed: "
            + "another program holds hci\(adapter) through the HCI user channel (EBUSY), and only one can."
        #expect(gattway.wait(timeout: 30) { _, stderr, _ in stderr.contains(explained) }, "\(gattway.stderr)")
        #expect(
            await notify.next(within: .seconds(30))
                == "READY=1\nSTATUS=degraded: Bluetooth controller hci\(adapter) unreachable or busy, retrying; sensors and MQTT running"
        )

        holder.stop()
        #expect(await notify.next(within: .seconds(60)) == "STATUS=running", "\(gattway.stderr)")
        #expect(gattway.stderr.contains("NOTICE gattway: controller poweredOn"))
    }
}
