import ArgumentParser
import Config
import ConfigReading
import Gateway

/// `gattway pair`: opens the running service's pairing window, so a new phone can pair.
struct PairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Let new phones pair with the running service for a while (the pairing window).",
        discussion: """
            With bluetooth.security.pairing: window (the default), gattway refuses every new \
            pairing unless a pairing window is open; phones already bonded reconnect as always. \
            This opens the window for --for (default bluetooth.security.pairing_window), through \
            the control socket: pair the phone within that time. --close closes it at once. While \
            it is open gattway advertises as LE Limited Discoverable, and MQTT's state topic says \
            "pairing": true. Exit 1 when the service does not answer.
            """)

    @OptionGroup var file: ConfigFileOption

    @Option(name: .customLong("for"), help: "How long the window stays open (e.g. 90s, 2m; 1s to 1h).")
    var length: String?

    @Flag(help: "Close the pairing window now.")
    var close = false

    func validate() throws {
        if close, length != nil { throw ValidationError("--close and --for exclude each other") }
        if let length, DurationText.parse(length) == nil {
            throw ValidationError("\(length) is not a duration (write a number and a unit: 90s, 2m)")
        }
    }

    func run() throws {
        let config = try loadConfigOrExit(file.config).config
        let seconds = length.flatMap(DurationText.parse).map { Int(($0 / .seconds(1)).rounded(.up)) }
        let request = close ? ControlRequest(.pairClose) : ControlRequest(.pair, seconds: seconds)
        switch ControlClient.ask(request, config: config) {
        case .answered(let response):
            guard let pairing = response.pairing else {
                printToStandardError(response.error ?? "gattway answered without the pairing window")
                throw ExitCode(1)
            }
            print(pairing.text)
        case .notRunning(let path):
            printToStandardError("gattway is not running (nothing answers on \(path))")
            throw ExitCode(1)
        case .failed(let message):
            printToStandardError(message)
            throw ExitCode(1)
        }
    }
}
