import Foundation
import TestHarness
import Testing

@testable import MQTTClient
@testable import MQTTMirror

@Suite("Client configuration")
struct ConfigurationTests {
    @Test func tlsVerifiesTheBrokerByDefault() {
        #expect(MQTTTLSConfiguration().verifyPeer)
        #expect(MQTTTLSConfiguration(caFile: "/ca.pem").verifyPeer)
    }

    @Test func passwordFromFileOrEnvironmentIsNeverDescribed() throws {
        let directory = try temporaryDirectory("password")
        let file = directory.appendingPathComponent("pw").path
        try "hunter2\nnot part of it\n".write(toFile: file, atomically: true, encoding: .utf8)
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
        #expect(
            (0...6).map { backoff.delay(attempt: $0) }
                == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5), .seconds(5)])
    }

    @Test func clientCertificateNeedsACAFile() {
        let configuration = MQTTClientConfiguration(
            host: "b", clientID: "gw", tls: MQTTTLSConfiguration(certificateFile: "/c.pem", keyFile: "/k.pem"))
        #expect(throws: MQTTError.invalidConfiguration("a client certificate (mqtt.tls cert, key) needs mqtt.tls ca as well")) {
            try MQTTClient(configuration: configuration, logger: testLogger)
        }
    }
}
