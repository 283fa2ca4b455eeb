import ArgumentParser
import Config
import FoundationEssentials
import Gateway
import Glibc
import Logging
import ServiceLifecycle

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the gateway until SIGTERM or SIGINT.",
        discussion: """
            Loads the configuration (exiting with status 1 and every problem listed if it is \
            invalid), then serves it. SIGTERM or SIGINT shut it down gracefully with status 0. \
            SIGHUP reloads the configuration file, as `gattway reload` does.
            """)

    @OptionGroup var file: ConfigFileOption
    @OptionGroup var runtime: RuntimeOptions

    func run() async throws {
        GatewayLogHandler.bootstrap(level: runtime.logLevel.level)
        let loaded = try loadConfigOrExit(file.config)
        let (path, runtime) = (file.config, runtime)
        try await runGateway(loaded, runtime: runtime) { () throws(ConfigError) in
            var reloaded = try ConfigLoader.load(file: path)
            reloaded.config = runtime.apply(to: reloaded.config)
            return reloaded
        }
    }
}

/// The one path from a loaded configuration to a running gateway (`run` and `demo`). A failure
/// to start (a missing GPIO line, an unwritable state directory) is printed and exits with 1.
/// `reloadConfig` reads the file again for a reload (nil: `demo`, which does not reload).
func runGateway(
    _ loaded: LoadedConfig, runtime: RuntimeOptions, companions: [any Service] = [],
    reloadConfig: (@Sendable () throws(ConfigError) -> LoadedConfig)? = nil
) async throws {
    let logger = Logger(label: "gattway")
    for warning in loaded.warnings {
        logger.warning("configuration: \(warning)")
    }
    do {
        try await GatewayService.runUntilSignalled(
            config: runtime.apply(to: loaded.config), reloadConfig: reloadConfig, logger: logger,
            systemd: SystemdNotifier(environment: ProcessInfo.processInfo.environment), companions: companions)
    } catch {
        logger.critical("gattway could not run: \(error)")
        throw ExitCode(1)
    }
}
