import ArgumentParser
import BluetoothCore
import BluetoothSMP
import Config

/// `gattway bonds list|remove ADDRESS|clear`: the bonded centrals in the state directory's
/// `bonds.json`. Keys are never printed. The running service keeps its bonds in memory and
/// rewrites the file when a central pairs, so change bonds while the service is stopped
/// (`systemctl stop gattway`) or restart it afterwards.
struct BondsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bonds",
        abstract: "List or remove the bonded centrals.",
        discussion: """
            Bonds live in bonds.json in the configuration's state_dir (mode 0600). Stop the service \
            before removing bonds, or restart it afterwards: it keeps its bonds in memory.
            """,
        subcommands: [List.self, Remove.self, Clear.self],
        defaultSubcommand: List.self)

    /// The bond store of the configuration's state directory.
    static func store(_ file: ConfigFileOption) throws -> BondStore {
        BondStore(directory: try loadConfigOrExit(file.config).config.stateDirectory)
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
            let store = try BondsCommand.store(file)
            let registry = try BondsCommand.run { () throws(BondStore.Error) -> BondRegistry in try store.load() }
            if registry.bonds.isEmpty {
                print("no bonded centrals in \(store.path)")
            }
            for bond in registry.bonds { print(bond.description) }
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
            let store = try BondsCommand.store(file)
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
            let store = try BondsCommand.store(file)
            let count = try BondsCommand.run { () throws(BondStore.Error) -> Int in
                let count = try store.load().bonds.count
                try store.clear()
                return count
            }
            print("removed \(count) bonds")
        }
    }
}
