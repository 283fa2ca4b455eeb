import Config
import Foundation
import TestHarness
import Testing
import Values

/// `bluetooth.bthome.key_file`: the bind key is read when the configuration is loaded, so
/// `gattway check` reports a missing or malformed key file with the key's path and line and the
/// file's name, never its contents.
struct BTHomeKeyConfigTests {
    static let key = "231d39c1d7cc1ab1aee224cd096db932"

    static func yaml(keyFile: String, broadcast: Bool = true) -> String {
        """
        bluetooth:
          bthome:
            key_file: \(keyFile)
        gpio:
          backend: simulated
          chips: [{lines: [{name: DOOR}]}]
        sensors:
          - {id: door, kind: binary, line: DOOR, bthome: \(broadcast)}
        """
    }

    /// A key file with `contents` and `mode` in a fresh directory.
    static func keyFile(_ contents: String, mode: Int = 0o600) throws -> String {
        let path = try temporaryDirectory("bthome-key").appendingPathComponent("bthome.key").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    static func errors(_ yaml: String) -> [String] {
        do {
            _ = try ConfigLoader.load(yaml: yaml)
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    @Test func theKeyIsReadFromTheFile() throws {
        let path = try Self.keyFile(Self.key.uppercased() + "\n")
        let loaded = try ConfigLoader.load(yaml: Self.yaml(keyFile: path))
        #expect(loaded.config.bluetooth.bthome.key == BTHomeKey(hex: Self.key))
        #expect(loaded.config.bluetooth.bthome.keyFile == path)
        #expect(loaded.warnings.isEmpty)
        #expect(ConfigSummary.lines(loaded.config).contains("BTHome broadcast of door, encrypted with the bind key in \(path)"))
    }

    @Test func withoutTheSectionNothingIsEncrypted() throws {
        let loaded = try ConfigLoader.load(
            yaml: Self.yaml(keyFile: "x").replacingOccurrences(of: "  bthome:\n    key_file: x\n", with: ""))
        #expect(loaded.config.bluetooth.bthome.key == nil)
        #expect(ConfigSummary.lines(loaded.config).contains("BTHome broadcast of door, not encrypted"))
    }

    @Test func aMissingFileIsNamed() {
        #expect(
            Self.errors(Self.yaml(keyFile: "/nonexistent/bthome.key")) == [
                "bluetooth.bthome.key_file (line 3): /nonexistent/bthome.key: no such file"
            ])
    }

    @Test(arguments: [
        (String(key.dropLast(2)), "holds 30 characters"),
        (key + "00", "holds 34 characters"),
        ("g" + key.dropFirst(), "holds 32 characters, not all hex digits")
    ])
    func aMalformedKeyIsNamedButNotShown(contents: String, holds: String) throws {
        let path = try Self.keyFile(contents)
        let errors = Self.errors(Self.yaml(keyFile: path))
        #expect(
            errors == [
                "bluetooth.bthome.key_file (line 3): \(path): not a BTHome bind key: it must hold 32 hex digits (16 bytes) and \(holds)"
            ])
        #expect(!errors.joined().contains(contents.prefix(8)))
    }

    @Test func aKeyOthersCanReadIsAWarning() throws {
        let path = try Self.keyFile(Self.key, mode: 0o644)
        let loaded = try ConfigLoader.load(yaml: Self.yaml(keyFile: path))
        #expect(loaded.config.bluetooth.bthome.key != nil)
        #expect(
            loaded.warnings.map(\.description) == [
                "bluetooth.bthome.key_file (line 3): \(path) is open to other users (mode 0644); the bind key reads every broadcast: chmod 600 it"
            ])
    }

    @Test func aKeyWithoutBroadcastSensorsIsAWarning() throws {
        let path = try Self.keyFile(Self.key)
        let loaded = try ConfigLoader.load(yaml: Self.yaml(keyFile: path, broadcast: false))
        #expect(
            loaded.warnings.map(\.description) == [
                "bluetooth.bthome.key_file (line 3): no sensor has bthome: true, so nothing is broadcast or encrypted"
            ])
    }
}
