import Foundation
import Testing
@testable import MQTT

@Suite("Client configuration")
struct ConfigurationTests {
    @Test func mqttsTurnsOnVerifiedTLSWithDefaultPort() throws {
        let secure = try MQTTClientConfiguration(url: "mqtts://broker.lan", clientID: "gw")
        #expect(secure.port == 8883)
        #expect(secure.tls == MQTTTLSConfiguration(verifyPeer: true))
        let plain = try MQTTClientConfiguration(url: "mqtt://10.0.0.2:1884", clientID: "gw")
        #expect(plain.host == "10.0.0.2" && plain.port == 1884 && plain.tls == nil)
        #expect(plain.protocolVersion == .v5)
    }

    @Test(arguments: ["http://broker", "mqtt://", "broker:1883"])
    func badBrokerURLsAreRejected(url: String) {
        #expect(throws: MQTTError.self) { try MQTTClientConfiguration(url: url, clientID: "gw") }
    }

    @Test func tlsSettingsOnAPlainURLAreRejected() {
        #expect(throws: MQTTError.invalidConfiguration("broker URL 'mqtt://b' is mqtt:// (plain TCP) but TLS settings were given; use mqtts://")) {
            try MQTTClientConfiguration(url: "mqtt://b", clientID: "gw", tls: MQTTTLSConfiguration(caFile: "/ca.pem"))
        }
    }

    @Test func passwordFromFileOrEnvironmentIsNeverDescribed() throws {
        let directory = try temporaryDirectory("password")
        let file = directory.appendingPathComponent("pw").path
        try "hunter2\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect(try MQTTPasswordSource.file(file).resolve() == "hunter2")
        #expect(try MQTTPasswordSource.environment("GW_PW").resolve(environment: ["GW_PW": "hunter3"]) == "hunter3")
        #expect(throws: MQTTError.passwordUnavailable("environment variable GW_PW is not set")) {
            try MQTTPasswordSource.environment("GW_PW").resolve(environment: [:])
        }
        #expect(throws: MQTTError.passwordUnavailable("cannot read password file /nonexistent/pw")) {
            try MQTTPasswordSource.file("/nonexistent/pw").resolve()
        }
        let configuration = MQTTClientConfiguration(
            host: "b", clientID: "gw", credentials: MQTTCredentials(username: "u", password: .file(file)))
        #expect(!String(describing: configuration).contains("hunter2"))
    }

    @Test func backoffDoublesUpToTheMaximum() {
        let backoff = MQTTBackoff(initial: .milliseconds(500), maximum: .seconds(5))
        #expect((0...6).map { backoff.delay(attempt: $0) }
            == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5)])
    }

    @Test func clientCertificateNeedsACAFile() {
        let configuration = MQTTClientConfiguration(
            host: "b", clientID: "gw", tls: MQTTTLSConfiguration(certificateFile: "/c.pem", keyFile: "/k.pem"))
        #expect(throws: MQTTError.invalidConfiguration("a client certificate needs tls ca_file as well")) {
            try MQTTClient(configuration: configuration, logger: testLogger)
        }
    }
}
