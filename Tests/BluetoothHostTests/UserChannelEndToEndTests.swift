import BluetoothHCI
import Foundation
import TestHarness
import Testing

/// Set by Tests/vm/hci-user-channel-tests.sh inside its VM, where hci_vhci is loaded and the
/// tests run as root: only there can a controller become a kernel adapter.
let vhciAvailable = ProcessInfo.processInfo.environment["GATTWAY_VHCI"] == "1"

/// The GATT end-to-end run through the Linux HCI user channel for real: the virtual controller
/// attaches one controller to the kernel through /dev/vhci (the kernel registers and powers it up
/// as hciN), gattway's host brings hciN down and opens it through the user channel, and a Bumble
/// phone on the same virtual link does everything `GATTEndToEndTests.onePhoneDoesEverything` does.
@Suite(
    .serialized, .timeLimit(.minutes(5)),
    .enabled(if: vhciAvailable, "GATTWAY_VHCI=1 is set only inside Tests/vm/hci-user-channel-tests.sh's VM"))
struct UserChannelEndToEndTests {
    @Test func onePhoneDoesEverythingThroughTheUserChannel() async throws {
        let controller = try await VirtualController(extraArguments: ["--vhci", "/dev/vhci"])
        let adapter = try #require(controller.kernelAdapter, "the virtual controller reported no kernel adapter")
        let running = try await GATTEndToEndTests.start(
            controller: controller,
            transport: .userChannel(adapter: adapter))
        defer { running.stop() }
        try await GATTEndToEndTests.onePhoneDoesEverything(running)
    }
}
