import Config
import Foundation
import MQTTMirror
import TestHarness
import Testing

/// The files the MQTT mirror reads when it connects (`mqtt.tls` ca, cert and key, and
/// `password_file`) are checked when the configuration is loaded, as `bluetooth.bthome.key_file`
/// is: `gattway check` names a missing or unreadable one with the key's path and line, rather
/// than the mirror finding it later, in the log. So are a password without a user name and an
/// IPv6 broker address without its brackets.
struct MQTTFilesConfigTests {
    /// A file named `name` in a fresh directory.
    static func file(_ name: String) throws -> String {
        let path = try temporaryDirectory("mqtt-files").appendingPathComponent(name).path
        try "x\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func filesThatExistAreTaken() throws {
        let (ca, cert, key, password) = (try Self.file("ca.pem"), try Self.file("c.pem"), try Self.file("c.key"), try Self.file("pw"))
        let loaded = try ConfigLoader.load(
            yaml: """
                mqtt:
                  url: mqtts://broker.lan
                  username: shed
                  password_file: \(password)
                  tls: {ca: \(ca), cert: \(cert), key: \(key)}
                """)
        #expect(loaded.config.mqtt?.tls == MQTTTLSConfiguration(caFile: ca, certificateFile: cert, keyFile: key))
    }

    @Test func missingTLSFilesAreNamed() {
        #expect(
            configurationErrors(
                """
                mqtt:
                  url: mqtts://broker.lan
                  tls:
                    ca: /nonexistent/ca.pem
                    cert: /nonexistent/client.pem
                    key: /nonexistent/client.key
                """) == [
                    "mqtt.tls.ca (line 4): /nonexistent/ca.pem: no such file",
                    "mqtt.tls.cert (line 5): /nonexistent/client.pem: no such file",
                    "mqtt.tls.key (line 6): /nonexistent/client.key: no such file"
                ])
    }

    @Test func aDirectoryIsNoFile() throws {
        let directory = try temporaryDirectory("mqtt-files").path
        #expect(
            configurationErrors("mqtt:\n  url: mqtts://broker.lan\n  tls: {ca: \(directory)}")
                == ["mqtt.tls.ca (line 3): \(directory): a directory, not a file"])
    }

    @Test func aMissingPasswordFileIsNamed() {
        #expect(
            configurationErrors("mqtt:\n  url: mqtt://broker.lan\n  username: shed\n  password_file: /nonexistent/pw")
                == ["mqtt.password_file (line 4): /nonexistent/pw: no such file"])
    }

    @Test func aPasswordNeedsAUserName() throws {
        let password = try Self.file("pw")
        #expect(
            configurationErrors("mqtt:\n  url: mqtt://broker.lan\n  password_file: \(password)")
                == ["mqtt.password_file (line 3): a password needs username as well (the broker is sent none without it)"])
    }

    @Test(arguments: ["mqtt://::1", "mqtt://fe80::1:1883", "mqtts://2001:db8::5"])
    func anIPv6AddressNeedsBrackets(_ url: String) {
        let errors = configurationErrors("mqtt:\n  url: \"\(url)\"")
        #expect(errors.count == 1 && errors[0].contains("an IPv6 address goes in brackets"), "\(errors)")
    }

    @Test(arguments: [("mqtt://[::1]", 1883), ("mqtt://[fe80::1]:1884", 1884)])
    func aBracketedIPv6AddressIsTaken(_ url: String, _ port: Int) throws {
        let loaded = try ConfigLoader.load(yaml: "mqtt:\n  url: \"\(url)\"")
        #expect(loaded.config.mqtt?.broker.port == UInt16(port))
    }
}
