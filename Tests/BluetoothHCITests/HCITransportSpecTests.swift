import BluetoothHCI
import Testing

@Suite struct HCITransportSpecTests {
    @Test(arguments: [
        ("hci0", HCITransportSpec.userChannel(adapter: 0)),
        ("hci12", .userChannel(adapter: 12)),
        ("tcp:127.0.0.1:6402", .tcp(host: "127.0.0.1", port: 6402)),
        ("tcp:localhost:1", .tcp(host: "localhost", port: 1)),
        ("tcp:[::1]:6402", .tcp(host: "::1", port: 6402)),
        ("unix:/run/gattway/vc.sock", .unix(path: "/run/gattway/vc.sock")),
        ("serial:/dev/ttyAMA0", .serial(device: "/dev/ttyAMA0", baudRate: 115_200)),
        ("serial:/dev/ttyUSB0,1000000", .serial(device: "/dev/ttyUSB0", baudRate: 1_000_000))
    ])
    func parsesValidSpecs(text: String, expected: HCITransportSpec) throws {
        #expect(try HCITransportSpec(parsing: text) == expected)
        #expect(try HCITransportSpec(parsing: expected.description) == expected)
    }

    @Test(arguments: [
        ("hci", "the adapter number must be 0-255, as in hci0"),
        ("hcix", "the adapter number must be 0-255, as in hci0"),
        ("hci256", "the adapter number must be 0-255, as in hci0"),
        ("bluetooth0", "unknown transport"),
        ("tcp:127.0.0.1", "missing :PORT"),
        ("tcp:localhost", "missing :PORT"),
        ("tcp::6402", "missing HOST"),
        ("tcp:host:0", "the port must be 1-65535"),
        ("tcp:host:70000", "the port must be 1-65535"),
        ("unix:", "missing PATH"),
        ("serial:", "missing DEVICE"),
        ("serial:/dev/ttyS0,12345", "unsupported baud rate \"12345\""),
        ("serial:/dev/ttyS0,9600,8N1", "too many commas"),
        ("usb:0", "unknown transport \"usb\"")
    ])
    func rejectsInvalidSpecsWithTheReason(text: String, reason: String) {
        #expect(throws: HCITransportSpec.ParseError(text: text, reason: reason)) {
            try HCITransportSpec(parsing: text)
        }
    }

    @Test func errorMessageNamesTheTextAndTheAcceptedForms() {
        let error = HCITransportSpec.ParseError(text: "usb:0", reason: "unknown transport \"usb\"")
        #expect(
            error.description == "\"usb:0\" is not an HCI transport: unknown transport \"usb\" "
                + "(expected hciN, tcp:HOST:PORT, unix:PATH or serial:DEVICE[,BAUD])")
    }
}
