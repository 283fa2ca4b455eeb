import ArgumentParser
import BluetoothCore
import BluetoothSMP
import Config
import Gateway
import StateFile

/// `gattway bonds list|remove ADDRESS|clear`: the bonded centrals. Keys are never printed. While
/// the service runs it holds the bonds (in memory and in `bonds.json`), so the command asks it on
/// its control socket; only when nothing answers there does it read and write the state
/// directory's `bonds.json` itself.
struct BondsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bonds",
        abstract: "List or remove the bonded centrals.",
        discussion: """
            Bonds live in bonds.json in the configuration's state_dir (mode 0600). While the \
            service runs, the command asks it on its control socket (in runtime_dir), so a \
            removed bond is gone from its memory and its file at once; when it is not running, \
            the command edits the file. A gattway that runs on the same state_dir without \
            answering there (its runtime_dir another) would undo an edit: the command then exits 1 \
            naming it.
            """,
        subcommands: [List.self, Remove.self, Clear.self],
        defaultSubcommand: List.self)

    /// Asks the running service; nil when it is not running (the caller then uses the file). A
    /// service that runs but cannot be asked, or refuses, is an error: editing the file under it
    /// would be undone.
    static func askService(_ request: ControlRequest, config: GatewayConfig) throws -> ControlResponse? {
        switch ControlClient.ask(request, config: config) {
        case .answered(let response):
            if let error = response.error {
                printToStandardError(error)
                throw ExitCode(1)
            }
            return response
        case .notRunning:
            return nil
        case .failed(let message):
            printToStandardError(message)
            throw ExitCode(1)
        }
    }

    /// The state directory's lock, held while the command edits `bonds.json` itself (no service
    /// answered): a gattway starting meanwhile is refused rather than load a half-edited store,
    /// and one that started since the control socket was tried (and would undo the edit) refuses
    /// the command.
    static func lockForEditing(_ config: GatewayConfig) throws -> StateDirectoryLock {
        do {
            return try StateDirectoryLock(directory: config.stateDirectory)
        } catch .held(_, let pid) {
            printToStandardError(
                ControlClient.unanswered(config, pid: pid)
                    + "; bonds.json is left as it is")
            throw ExitCode(1)
        } catch {
            printToStandardError(error.description)
            throw ExitCode(1)
        }
    }

    static func run<T>(_ body: () throws(BondStore.Error) -> T) throws -> T {
        do {
            return try body()
        } catch {
            printToStandardError(error.description)
            throw ExitCode(1)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print each bonded central: identity address, key strength, subscriptions (never keys).")

        @OptionGroup var file: ConfigFileOption

        func run() throws {
            let config = try loadConfigOrExit(file.config).config
            let store = BondStore(directory: config.stateDirectory)
            let bonds: [String]
            if let response = try BondsCommand.askService(ControlRequest(.bondsList), config: config) {
                bonds = response.bonds ?? []
            } else {
                bonds = try BondsCommand.run { () throws(BondStore.Error) -> [String] in
                    try store.load().bonds.map(\.description)
                }
            }
            if bonds.isEmpty {
                print("no bonded centrals in \(store.path)")
            }
            for bond in bonds { print(bond) }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget one bonded central, by its identity address or a private address its IRK resolves.")

        @OptionGroup var file: ConfigFileOption

        @Argument(help: ArgumentHelp("The central's address, AA:BB:CC:DD:EE:FF.", valueName: "address"))
        var address: String

        func validate() throws {
            guard BluetoothAddress(address) != nil else {
                throw ValidationError("\(address) is not a Bluetooth address (AA:BB:CC:DD:EE:FF)")
            }
        }

        func run() throws {
            let config = try loadConfigOrExit(file.config).config
            if try BondsCommand.askService(ControlRequest(.bondsRemove, address: address), config: config) != nil {
                print("removed the bond of \(address)")
                return
            }
            let lock = try BondsCommand.lockForEditing(config)
            defer { withExtendedLifetime(lock) {} }
            let store = BondStore(directory: config.stateDirectory)
            // The address type is not typed on the command line: public first, then random.
            let candidates = [BluetoothAddress.Kind.public, .random].compactMap { BluetoothAddress(address, kind: $0) }
            let removed = try BondsCommand.run { () throws(BondStore.Error) -> Bool in
                for candidate in candidates where try store.remove(candidate) { return true }
                return false
            }
            guard removed else {
                printToStandardError("no bond for \(address) in \(store.path)")
                throw ExitCode(1)
            }
            print("removed the bond of \(address)")
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget every bonded central.")

        @OptionGroup var file: ConfigFileOption

        func run() throws {
            let config = try loadConfigOrExit(file.config).config
            if let response = try BondsCommand.askService(ControlRequest(.bondsClear), config: config) {
                print("removed \(response.removed ?? 0) bonds")
                return
            }
            let lock = try BondsCommand.lockForEditing(config)
            defer { withExtendedLifetime(lock) {} }
            let store = BondStore(directory: config.stateDirectory)
            let count = try BondsCommand.run { () throws(BondStore.Error) -> Int in
                let count = try store.load().bonds.count
                try store.clear()
                return count
            }
            print("removed \(count) bonds")
        }
    }
}
