import FoundationEssentials
import Glibc

/// A private mosquitto for `gattway demo`: listens on loopback only, anonymous, nothing
/// persisted; its configuration lives in a temporary directory removed on `stop()`.
public final class DemoBroker: @unchecked Sendable {
    public enum Failure: Error, CustomStringConvertible {
        case missing
        case notStarted(String)

        public var description: String {
            switch self {
            case .missing:
                "mosquitto is not installed: install it with `sudo apt-get install mosquitto` "
                    + "(the demo starts its own broker; the system service may stay disabled)"
            case .notStarted(let reason): "mosquitto did not start: \(reason)"
            }
        }
    }

    private let child: DemoChild
    private let directory: URL

    /// Where mosquitto is found: `$PATH`, then /usr/sbin (Debian installs it there, outside a
    /// normal user's PATH).
    public static func executable(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let path = (environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin"]
        return path.map { "\($0)/mosquitto" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The broker's configuration file text.
    public static func configuration(port: UInt16) -> String {
        """
        listener \(port) 127.0.0.1
        allow_anonymous true
        persistence false
        log_dest stderr
        log_type error
        log_type warning

        """
    }

    public init(port: UInt16) throws {
        guard let executable = Self.executable() else { throw Failure.missing }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gattway-demo-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("mosquitto.conf")
        try Self.configuration(port: port).write(to: file, atomically: true, encoding: .utf8)
        do {
            child = try DemoChild(executable: executable, arguments: ["-c", file.path])
        } catch {
            throw Failure.notStarted("\(error)")
        }
    }

    /// Stops the broker (SIGTERM, then waits for it) and removes its configuration.
    public func stop() {
        child.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
