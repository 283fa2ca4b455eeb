import Config
import Logging
import ServiceLifecycle

/// The running gateway: started by `gattway run` (and `gattway demo`) inside a `ServiceGroup`
/// that turns SIGTERM and SIGINT into a graceful shutdown.
public struct GatewayService: Service {
    private let config: GatewayConfig
    private let logger: Logger
    private let systemd: SystemdNotifier

    public init(config: GatewayConfig, logger: Logger, systemd: SystemdNotifier) {
        self.config = config
        self.logger = logger
        self.systemd = systemd
    }

    public func run() async throws {
        for line in ConfigSummary.lines(config) {
            logger.info("\(line)")
        }
        logger.notice("gattway running", metadata: ["device": "\(config.device.id)"])
        systemd.ready(status: "running")
        // Suspends until the group starts a graceful shutdown (SIGTERM/SIGINT); a plain
        // cancellation ends the wait the same way.
        try? await gracefulShutdown()
        systemd.stopping()
        logger.notice("gattway stopped")
    }

    /// Runs the gateway until SIGTERM or SIGINT, then returns.
    public static func runUntilSignalled(config: GatewayConfig, logger: Logger,
                                         systemd: SystemdNotifier) async throws {
        let group = ServiceGroup(configuration: .init(
            services: [.init(service: GatewayService(config: config, logger: logger, systemd: systemd))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
    }
}
