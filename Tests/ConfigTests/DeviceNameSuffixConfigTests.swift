import Config
import Foundation
import TestHarness
import Testing

/// `device.name_add_suffix`: one configuration (the Raspberry Pi image's) for many gateways, each
/// named after its own machine id, so that their MQTT client ids, topics and Home Assistant
/// devices do not collide; explicit settings still win.
struct DeviceNameSuffixConfigTests {
    static let machineA = "0123456789abcdef0123456789abcdef"
    static let machineB = "d0c1e2f3a4b5968778695a4b3c2d1e0f"

    /// A machine-id file holding `contents`, in a fresh directory.
    static func machineIDFile(_ contents: String) throws -> String {
        let path = try temporaryDirectory("machine-id").appendingPathComponent("machine-id").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func load(_ yaml: String, machineID: String) throws -> GatewayConfig {
        try ConfigLoader.load(yaml: yaml, machineIDFile: machineIDFile(machineID + "\n")).config
    }

    static let suffixed = """
        device:
          name_add_suffix: true
        mqtt:
          url: mqtt://127.0.0.1:1883
        """

    /// FNV-1a (64 bits) of the machine id's text, its low 24 bits, worked out apart from the code.
    @Test(arguments: [
        (machineA, "-f0ff55"),
        (machineB, "-bcf029")
    ])
    func theSuffixIsAHashOfTheMachineID(machineID: String, suffix: String) {
        #expect(ConfigDefaults.nameSuffix(machineID: machineID) == suffix)
    }

    @Test func twoMachinesGetTwoIdentities() throws {
        let a = try Self.load(Self.suffixed, machineID: Self.machineA)
        let b = try Self.load(Self.suffixed, machineID: Self.machineB)
        #expect(a.device.name == "gattway-f0ff55")
        #expect(a.device.id == "gattway-f0ff55")
        #expect(a.bluetooth.advertising.localName == "gattway-f0ff55")
        #expect(a.mqtt?.clientID == "gattway-gattway-f0ff55")
        #expect(b.device.name == "gattway-bcf029")
        #expect(b.device.id == "gattway-bcf029")
        #expect(b.mqtt?.clientID == "gattway-gattway-bcf029")
    }

    @Test func theSuffixFollowsAGivenNameAndAnExplicitIDWins() throws {
        let named = try Self.load(
            "device: {name: Greenhouse, name_add_suffix: true}", machineID: Self.machineA.uppercased())
        #expect(named.device.name == "Greenhouse-f0ff55")
        #expect(named.device.id == "greenhouse-f0ff55")
        let withID = try Self.load(
            "device: {name: Greenhouse, id: greenhouse, name_add_suffix: true}", machineID: Self.machineA)
        #expect(withID.device.name == "Greenhouse-f0ff55")
        #expect(withID.device.id == "greenhouse")
    }

    @Test func withoutTheKeyTheNameStaysAsWritten() throws {
        let plain = try Self.load("device: {name_add_suffix: false}", machineID: Self.machineA)
        #expect(plain.device.name == "gattway")
        #expect(plain.device.id == "gattway")
        let absent = try Self.load("device: {name: Greenhouse}", machineID: Self.machineA)
        #expect(absent.device.name == "Greenhouse")
    }

    @Test(arguments: ["", "uninitialized", "0123456789abcdef"])
    func aMachineIDFileWithoutAnIDIsAnError(contents: String) throws {
        let path = try Self.machineIDFile(contents)
        #expect {
            _ = try ConfigLoader.load(yaml: Self.suffixed, machineIDFile: path)
        } throws: { error in
            let message = (error as? ConfigError)?.errors.map(\.description).joined() ?? ""
            return message.contains("device.name_add_suffix") && message.contains("\(path) holds no machine id")
        }
    }

    @Test func aMissingMachineIDFileIsNamed() throws {
        let path = try temporaryDirectory("machine-id").appendingPathComponent("absent").path
        #expect {
            _ = try ConfigLoader.load(yaml: Self.suffixed, machineIDFile: path)
        } throws: { error in
            let message = (error as? ConfigError)?.errors.map(\.description).joined() ?? ""
            return message.contains("\(path) cannot be read")
        }
    }
}
