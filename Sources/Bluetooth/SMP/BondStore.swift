import BluetoothCore
import FoundationEssentials
import StateFile

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The bonds on disk: `bonds.json` in the state directory, readable by the service user only.
///
/// Writes go through `StateFile`, the running service's on its writer thread (a temporary file created with mode 0600 — never wider, not even
/// for a moment — written, fsynced, renamed over the old file, and the directory fsynced), so a
/// power cut leaves either the old bonds or the new ones. The file holds keys: nothing here logs it.
public struct BondStore: Sendable {
    public enum Error: Swift.Error, Hashable, CustomStringConvertible {
        case cannotCreateDirectory(path: String, errno: Int32)
        case cannotRead(path: String, errno: Int32)
        case cannotWrite(path: String, errno: Int32)
        case malformed(path: String, reason: String)

        public var description: String {
            switch self {
            case .cannotCreateDirectory(let path, let code): "cannot create state directory \(path): \(Self.text(code))"
            case .cannotRead(let path, let code): "cannot read bond file \(path): \(Self.text(code))"
            case .cannotWrite(let path, let code): "cannot write bond file \(path): \(Self.text(code))"
            case .malformed(let path, let reason): "bond file \(path) is malformed: \(reason)"
            }
        }

        private static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
    }

    public static let fileName = "bonds.json"

    public let directory: String
    public var path: String { directory + "/" + Self.fileName }

    public init(directory: String) {
        self.directory = directory
    }

    /// The stored bonds; none when the file does not exist yet. A file that others could read
    /// (an old install, a copy) is narrowed to 0600 on load.
    public func load() throws(Error) -> BondRegistry {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return BondRegistry() }
            throw .cannotRead(path: path, errno: errno)
        }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0, status.st_mode & 0o077 != 0 {
            _ = fchmod(descriptor, 0o600)
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path: path, errno: errno)
            }
            if count == 0 { break }
            data += buffer[..<count]
        }
        let file: StoredFile
        do {
            file = try JSONDecoder().decode(StoredFile.self, from: Data(data))
        } catch {
            throw .malformed(path: path, reason: Self.describe(error))
        }
        guard file.version == 1 else { throw .malformed(path: path, reason: "unknown version \(file.version)") }
        var bonds: [Bond] = []
        for (index, stored) in file.bonds.enumerated() {
            guard let bond = stored.bond else { throw .malformed(path: path, reason: "bond \(index) has an invalid field") }
            bonds.append(bond)
        }
        return BondRegistry(bonds)
    }

    /// `gattway bonds remove ADDRESS`: drops the bond of `address` (identity, or a private
    /// address one of the IRKs resolves); false when there was none. On the file: the CLI calls
    /// it only when no running service answers on the control socket (a running one removes the
    /// bond from its memory and rewrites the file itself).
    @discardableResult
    public func remove(_ address: BluetoothAddress) throws(Error) -> Bool {
        var registry = try load()
        guard registry.remove(address) else { return false }
        try save(registry)
        return true
    }

    /// `gattway bonds clear`: forgets every bond.
    public func clear() throws(Error) {
        try save(BondRegistry())
    }

    /// Replaces the stored bonds with `registry`, atomically (`StateFile`), on the caller's
    /// thread: for `gattway bonds` with the service stopped, which has no event loop to spare.
    public func save(_ registry: BondRegistry) throws(Error) {
        let bytes = try contents(registry)
        do {
            try StateFile.write(bytes, to: path, mode: 0o600)
        } catch {
            throw failure(error)
        }
    }

    /// Replaces the stored bonds with `registry`, atomically, on the state files' writer thread
    /// (the running service: the event loop never waits for the disk); then calls `completion`
    /// there with nil or the error.
    public func save(
        _ registry: BondRegistry, using writer: StateFileWriter, completion: @escaping @Sendable (Error?) -> Void
    ) {
        let bytes: [UInt8]
        do {
            bytes = try contents(registry)
        } catch {
            completion(error)
            return
        }
        writer.write(bytes, to: path, mode: 0o600) { [self] error in completion(error.map(failure)) }
    }

    private func contents(_ registry: BondRegistry) throws(Error) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let file = StoredFile(version: 1, bonds: registry.bonds.map(StoredBond.init))
        do {
            return Array(try encoder.encode(file))
        } catch {
            throw .malformed(path: path, reason: Self.describe(error))
        }
    }

    private func failure(_ error: StateFileError) -> Error {
        error.path == directory && error.operation == "create"
            ? .cannotCreateDirectory(path: directory, errno: error.errno)
            : .cannotWrite(path: error.path, errno: error.errno)
    }

    /// Decoding errors name the key that is wrong, never the values (which may be keys).
    private static func describe(_ error: any Swift.Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, _): "missing \(key.stringValue)"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.dataCorrupted(let context):
            "not JSON at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        default: "cannot encode"
        }
    }
}

/// The file format, version 1. Keys are hex, most significant byte first; addresses as people
/// write them.
private struct StoredFile: Codable {
    var version: Int
    var bonds: [StoredBond]
}

private struct StoredBond: Codable {
    var address: String
    var addressType: String
    var longTermKey: String
    var ediv: UInt16
    var rand: UInt64
    var keySize: UInt8
    var authenticated: Bool
    var secureConnections: Bool
    var peerIdentityResolvingKey: String?
    var localIdentityResolvingKey: String?
    var peerSigningKey: String?
    var localSigningKey: String?
    /// CCCD attribute handle (decimal, as JSON keys are strings) → value.
    var clientConfigurations: [String: UInt16]
    /// Hex as the characteristic carries it; absent in files written before gattway kept it.
    var databaseHash: String?
    /// Absent when the central wrote none (and in files written before gattway kept it).
    var clientSupportedFeatures: UInt8?

    init(_ bond: Bond) {
        address = bond.identity.description
        addressType = bond.identity.kind == .public ? "public" : "random"
        longTermKey = bond.longTermKey.key.bytes.hexString
        ediv = bond.longTermKey.ediv
        rand = bond.longTermKey.rand
        keySize = bond.longTermKey.keySize
        authenticated = bond.longTermKey.authenticated
        secureConnections = bond.longTermKey.secureConnections
        peerIdentityResolvingKey = bond.peerIdentityResolvingKey?.bytes.hexString
        localIdentityResolvingKey = bond.localIdentityResolvingKey?.bytes.hexString
        peerSigningKey = bond.peerSigningKey?.bytes.hexString
        localSigningKey = bond.localSigningKey?.bytes.hexString
        clientConfigurations = Dictionary(uniqueKeysWithValues: bond.clientConfigurations.map { (String($0.key), $0.value) })
        databaseHash = bond.databaseHash?.hexString
        clientSupportedFeatures = bond.clientSupportedFeatures == 0 ? nil : bond.clientSupportedFeatures
    }

    var bond: Bond? {
        let kind: BluetoothAddress.Kind
        switch addressType {
        case "public": kind = .public
        case "random": kind = .random
        default: return nil
        }
        guard let identity = BluetoothAddress(address, kind: kind), let ltk = Self.key(longTermKey),
            (7...16).contains(keySize)
        else { return nil }
        var configurations: [UInt16: UInt16] = [:]
        for (handle, value) in clientConfigurations {
            guard let handle = UInt16(handle) else { return nil }
            configurations[handle] = value
        }
        let optionalKeys = [peerIdentityResolvingKey, localIdentityResolvingKey, peerSigningKey, localSigningKey]
        let parsed = optionalKeys.map { $0.map(Self.key) }
        guard !parsed.contains(where: { $0 == .some(nil) }) else { return nil }
        let hash = databaseHash.map { [UInt8](hexString: $0) }
        guard hash != .some(nil) else { return nil }
        return Bond(
            identity: identity,
            longTermKey: LongTermKey(
                key: ltk, ediv: ediv, rand: rand, keySize: keySize,
                authenticated: authenticated, secureConnections: secureConnections),
            peerIdentityResolvingKey: parsed[0] ?? nil, localIdentityResolvingKey: parsed[1] ?? nil,
            peerSigningKey: parsed[2] ?? nil, localSigningKey: parsed[3] ?? nil,
            clientConfigurations: configurations, databaseHash: hash ?? nil,
            clientSupportedFeatures: clientSupportedFeatures ?? 0)
    }

    private static func key(_ text: String) -> SecretKey? { SecretKey(hexString: text) }
}
