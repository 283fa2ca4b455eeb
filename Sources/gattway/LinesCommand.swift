import ArgumentParser
import Config
import GPIO
import GPIOLibgpiod

struct LinesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lines",
        abstract: "List GPIO chips and their lines: names, consumers and direction.",
        discussion: """
            With the libgpiod backend, lists the chips under /dev. With the simulated backend \
            (--backend simulated, or a --config whose gpio.backend is simulated), lists the \
            configured simulated chips, which lines the configuration's sensors use, and the \
            generator driving each.
            """)

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A configuration whose gpio section selects the backend and describes simulated chips.",
            valueName: "file"))
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The GPIO backend to list: libgpiod or simulated (default: the configuration's, else libgpiod).",
            valueName: "backend"))
    var backend: GPIOBackendKind?

    @Option(name: .long, help: ArgumentHelp("Only this chip (name, label or /dev path).", valueName: "chip"))
    var chip: String?

    func run() throws {
        let loaded = try config.map(loadConfigOrExit)
        let backend = backend ?? loaded?.config.gpio.backend ?? .libgpiod
        let inventory: any LineInventory
        var board: RaspberryPiBoard?
        switch backend {
        case .simulated:
            guard let loaded else {
                throw ValidationError("--backend simulated needs --config: simulated chips are described there")
            }
            inventory = SimulatedLineInventory(config: loaded.config)
        case .libgpiod:
            let libgpiod = LibgpiodBackend()
            board = libgpiod.board
            inventory = BackendLineInventory(backend: libgpiod)
        }
        let all: [ChipListing]
        do {
            all = try inventory.chips()
        } catch {
            printToStandardError("gattway lines: \(error)")
            throw ExitCode(1)
        }
        // A Raspberry Pi whose kernel shows no chip for the header (Debian trixie's on a Pi 5).
        let headerless = board.flatMap { all.contains { RaspberryPiHeader.isPinController(label: $0.label) } ? nil : $0 }
        if all.isEmpty {
            printToStandardError(
                headerless.map { "gattway lines: \($0.missingHeaderChip(chips: []))" }
                    ?? "no GPIO chips found (libgpiod looks under /dev for gpiochipN)")
            throw ExitCode(1)
        }
        let chips = all.filter { listing in
            chip.map { [listing.name, listing.label, "/dev/\(listing.name)"].contains($0) } ?? true
        }
        if let chip, chips.isEmpty {
            printToStandardError("no chip \"\(chip)\"")
            throw ExitCode(1)
        }
        for listing in chips {
            print(listing.rendered())
        }
        if let headerless {
            printToStandardError("note: \(headerless.missingHeaderChip())")
        }
    }
}

extension GPIOBackendKind: ExpressibleByArgument {}
