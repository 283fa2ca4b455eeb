import FoundationEssentials
import Glibc
import MQTTMirror

extension MQTTPasswordSource {
    /// Reads the password. Throws `MQTTError.passwordUnavailable` naming the file or variable
    /// (never the value) when it cannot be read.
    public func resolve(
        environment: [String: String] = ProcessInfo.processInfo.environment
    )
        throws -> String
    {
        switch self {
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path),
                let text = String(data: data, encoding: .utf8)
            else { throw MQTTError.passwordUnavailable("cannot read password file \(path)") }
            let firstLine = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return String(firstLine.hasSuffix("\r") ? firstLine.dropLast() : firstLine)
        case .environment(let name):
            guard let value = environment[name] else {
                throw MQTTError.passwordUnavailable("environment variable \(name) is not set")
            }
            return value
        }
    }
}

public struct MQTTCredentials: Sendable, Equatable {
    public var username: String
    public var password: MQTTPasswordSource?

    public init(username: String, password: MQTTPasswordSource? = nil) {
        self.username = username
        self.password = password
    }
}

/// Exponential reconnect back-off: `initial`, doubled after each failed attempt, capped at `maximum`.
public struct MQTTBackoff: Sendable, Equatable {
    public var initial: Duration
    public var maximum: Duration

    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = max(initial, maximum)
    }

    /// Delay before retry number `attempt` (0-based).
    public func delay(attempt: Int) -> Duration {
        var delay = initial
        for _ in 0..<min(attempt, 32) {
            delay = delay * 2
            if delay >= maximum { return maximum }
        }
        return delay
    }
}

public struct MQTTClientConfiguration: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var protocolVersion: MQTTProtocolVersion
    public var clientID: String
    public var keepalive: Duration
    /// nil: plain TCP. Set (possibly with defaults) for TLS.
    public var tls: MQTTTLSConfiguration?
    public var credentials: MQTTCredentials?
    public var will: MQTTWill?
    public var backoff: MQTTBackoff
    /// How many messages the broker may have left to take (unsent, unacknowledged) before the
    /// client says it is behind (`MQTTClient.isBehind(on:)`).
    public var maximumBacklog: Int

    public init(
        host: String, port: Int = 1883, protocolVersion: MQTTProtocolVersion = .v5,
        clientID: String, keepalive: Duration = .seconds(30),
        tls: MQTTTLSConfiguration? = nil, credentials: MQTTCredentials? = nil,
        will: MQTTWill? = nil, backoff: MQTTBackoff = MQTTBackoff(), maximumBacklog: Int = 1_000
    ) {
        self.maximumBacklog = maximumBacklog
        self.host = host
        self.port = port
        self.protocolVersion = protocolVersion
        self.clientID = clientID
        self.keepalive = keepalive
        self.tls = tls
        self.credentials = credentials
        self.will = will
        self.backoff = backoff
    }
}
