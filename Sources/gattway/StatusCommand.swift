import ArgumentParser
import Gateway

/// `gattway status`: what the running service reports on its control socket.
struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the running service's state: controller, centrals, sensor values, counters, MQTT.",
        discussion: """
            Asks the running service on its control socket (control.sock in the configuration's \
            runtime_dir): the controller's state, each connected central with its MTU, link \
            security and subscriptions, each sensor's current values, the notify counters, and \
            the MQTT mirror (connected or why not, behind or not, its outbox). Exit 1 when the \
            service does not answer.
            """)

    @OptionGroup var file: ConfigFileOption

    @Flag(help: "Print the answer as one line of JSON.")
    var json = false

    func run() throws {
        let config = try loadConfigOrExit(file.config).config
        switch ControlClient.ask(ControlRequest(.status), config: config) {
        case .answered(let response):
            guard let status = response.status else {
                printToStandardError(response.error ?? "gattway answered without a status")
                throw ExitCode(1)
            }
            print(json ? String(decoding: ControlLine.encode(status).dropLast(), as: UTF8.self) : status.text)
        case .notRunning(let path):
            printToStandardError("gattway is not running (nothing answers on \(path))")
            throw ExitCode(1)
        case .failed(let message):
            printToStandardError(message)
            throw ExitCode(1)
        }
    }
}
