import ArgumentParser
import Gateway

/// `gattway reload`: the running service reads its configuration file again.
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Make the running service read its configuration file again.",
        discussion: """
            The service reads the file it was started with (`gattway run --config`); --config \
            names the file to check first and, through its runtime_dir, the service's control \
            socket, so name the same file. An invalid one is reported as `gattway check` reports \
            it and the service is not asked. Otherwise asks the running service on its control socket, as \
            SIGHUP (`systemctl reload gattway`) does: sensors added, removed or changed are \
            started, stopped or restarted (a changed one that cannot start runs as before); \
            changed GATT services are published anew (Service \
            Changed to the centrals), notify policies and MQTT settings apply in place, centrals \
            staying connected; every other change is listed as waiting for a restart. Prints what \
            was applied. Exit 1 when the file is invalid, a change could not be applied, or the \
            service does not answer.
            """)

    @OptionGroup var file: ConfigFileOption

    func run() throws {
        let config = try loadConfigOrExit(file.config).config
        switch ControlClient.ask(ControlRequest(.reload), config: config) {
        case .answered(let response):
            guard let report = response.reload else {
                printToStandardError(response.error ?? "gattway answered without a reload report")
                throw ExitCode(1)
            }
            for line in report.lines {
                if report.rejected { printToStandardError(line) } else { print(line) }
            }
            if report.rejected || !report.failed.isEmpty { throw ExitCode(1) }
        case .notRunning(let path):
            printToStandardError("gattway is not running (nothing answers on \(path))")
            throw ExitCode(1)
        case .failed(let message):
            printToStandardError(message)
            throw ExitCode(1)
        }
    }
}
