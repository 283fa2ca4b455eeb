import BluetoothCore
import Config
import FoundationEssentials
import StateFile
import Values

/// A characteristic's written ESS trigger descriptors as `es-triggers.json` keeps them: the
/// descriptor values a read returns, with the characteristic's UUID and format, so a restart
/// whose configuration changed them does not apply settings written for something else (a
/// reference value means nothing in another format).
struct SavedTriggers: Codable, Sendable, Equatable {
    var uuid: String
    /// `ValueEncoding`'s format and exponent, e.g. `sint16 e-2`.
    var format: String
    /// Each ES Trigger Setting's value in hex, in descriptor order.
    var settings: [String]
    /// The ES Configuration's value in hex.
    var configuration: String

    /// Whether they were written for a characteristic like `config`.
    func fits(_ config: CharacteristicConfig) -> Bool {
        uuid == "\(config.uuid)" && format == Self.format(config.encoding)
    }

    private static func format(_ encoding: ValueEncoding) -> String {
        encoding.format.rawValue + (encoding.exponent == 0 ? "" : " e\(encoding.exponent)")
    }
}

extension SavedTriggers {
    /// The settings of `triggers` (nil while the configured policy governs) for a characteristic
    /// of `config`.
    init?(_ triggers: TriggerDescriptors, of config: CharacteristicConfig) {
        guard triggers.isWritten else { return nil }
        uuid = "\(config.uuid)"
        format = Self.format(config.encoding)
        settings = triggers.settings.map { $0.bytes(encoding: config.encoding).hexString }
        configuration = triggers.logic.bytes.hexString
    }
}

/// `es-triggers.json` in the state directory: the trigger settings centrals wrote, by
/// characteristic path (`<service>/<characteristic>`), so they govern notifications again after a
/// restart, as they did before it (ESS: the settings are the server's). Written whole through
/// `StateFile` after each accepted write; read once at start.
public struct TriggerFile: Sendable {
    public static let fileName = "es-triggers.json"

    public let path: String
    private let writer: StateFileWriter

    /// `writer`: the service's state files' writer, which writes the file.
    public init(stateDirectory: String, writer: StateFileWriter) {
        path = stateDirectory + "/" + Self.fileName
        self.writer = writer
    }

    /// The saved settings, none when there is no file yet.
    func load() throws -> [String: SavedTriggers] {
        guard let bytes = try StateFile.read(path) else { return [:] }
        do {
            return try JSONDecoder().decode(Contents.self, from: Data(bytes)).characteristics
        } catch {
            throw TriggerFileError(path: path, reason: "is not a trigger file (\(error))")
        }
    }

    /// Replaces the file on the state files' writer thread, then calls `completion` there with
    /// nil or the error.
    func save(_ characteristics: [String: SavedTriggers], completion: @escaping @Sendable ((any Error)?) -> Void) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        do {
            let bytes = try encoder.encode(Contents(characteristics: characteristics))
            writer.write(Array(bytes) + [UInt8(ascii: "\n")], to: path) { completion($0) }
        } catch {
            completion(error)
        }
    }

    private struct Contents: Codable {
        var characteristics: [String: SavedTriggers]
    }
}

struct TriggerFileError: Error, CustomStringConvertible {
    let path: String
    let reason: String
    var description: String { "\(path) \(reason)" }
}
