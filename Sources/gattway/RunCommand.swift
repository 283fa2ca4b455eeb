import ArgumentParser
import Config
import Foundation
import Gateway
import Logging

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the gateway until SIGTERM or SIGINT.",
        discussion: """
            Loads the configuration (exiting with status 1 and every problem listed if it is \
            invalid), then serves it. SIGTERM or SIGINT shut it down gracefully with status 0.
            """)

    @OptionGroup var file: ConfigFileOption
    @OptionGroup var runtime: RuntimeOptions

    func run() async throws {
        GatewayLogHandler.bootstrap(level: runtime.logLevel)
        let loaded = try loadConfigOrExit(file.config)
        try await runGateway(loaded, runtime: runtime)
    }
}

/// The one path from a loaded configuration to a running gateway (`run` and `demo`).
func runGateway(_ loaded: LoadedConfig, runtime: RuntimeOptions) async throws {
    let logger = Logger(label: "gattway")
    for warning in loaded.warnings {
        logger.warning("configuration: \(warning)")
    }
    try await GatewayService.runUntilSignalled(
        config: runtime.apply(to: loaded.config), logger: logger,
        systemd: SystemdNotifier(environment: ProcessInfo.processInfo.environment))
}
