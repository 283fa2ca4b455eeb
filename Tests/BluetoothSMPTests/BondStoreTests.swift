import BluetoothCore
import Foundation
import TestHarness
import Testing

@testable import BluetoothSMP

@Suite struct BondStoreTests {

    /// The IRK and prand of Core Vol 3 Part H Appendix D.7 (ah): hash 0x0dfbaa.
    static let appendixIRK = SecretKey(mostSignificantFirst: hex("ec0234a3 57c8ad05 341010a6 0a397d9b"))
    static let appendixRPA = BluetoothAddress("70:81:94:0D:FB:AA", kind: .random)!

    static let ltkBytes = hex("6986791169d7cd23980522b594750a38")
    static let databaseHash = hex("f1b2c3d4e5f60718293a4b5c6d7e8f90")
    static func bond(
        _ address: String = "C0:11:22:33:44:55", irk: SecretKey? = appendixIRK, databaseHash: [UInt8]? = databaseHash
    ) -> Bond {
        Bond(
            identity: BluetoothAddress(address, kind: .random)!,
            longTermKey: LongTermKey(
                key: SecretKey(mostSignificantFirst: ltkBytes), keySize: 16,
                authenticated: true, secureConnections: true),
            peerIdentityResolvingKey: irk,
            localIdentityResolvingKey: SecretKey(mostSignificantFirst: hex("00112233445566778899aabbccddeeff")),
            peerSigningKey: SecretKey(mostSignificantFirst: hex("fedcba98765432100123456789abcdef")),
            clientConfigurations: [0x002A: 0x0001, 0x0031: 0x0002], databaseHash: databaseHash)
    }

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func resolvesTheAppendixDResolvablePrivateAddress() {
        #expect(Self.appendixRPA.isResolvablePrivate)
        let registry = BondRegistry([Self.bond("C0:00:00:00:00:01", irk: nil), Self.bond()])
        #expect(registry.bond(for: Self.appendixRPA)?.identity == BluetoothAddress("C0:11:22:33:44:55", kind: .random))
        #expect(registry.bond(for: BluetoothAddress("70:81:94:0D:FB:AB", kind: .random)!) == nil)
        #expect(registry.bond(for: BluetoothAddress("C0:00:00:00:00:01", kind: .random)!) != nil)
        // Same bytes, public type: a different device.
        #expect(registry.bond(for: BluetoothAddress("C0:00:00:00:00:01")!) == nil)
    }

    @Test func registryReplacesRemovesAndClears() {
        var registry = BondRegistry([Self.bond("C0:00:00:00:00:02", irk: nil), Self.bond()])
        var replaced = Self.bond()
        replaced.clientConfigurations = [:]
        registry.insert(replaced)
        #expect(registry.bonds.count == 2)
        #expect(registry.bonds.map(\.identity.description) == ["C0:00:00:00:00:02", "C0:11:22:33:44:55"])
        let removed = registry.remove(Self.appendixRPA)
        let removedAgain = registry.remove(Self.appendixRPA)
        #expect(removed && !removedAgain)
        #expect(registry.bonds.count == 1)
        registry.removeAll()
        #expect(registry.bonds.isEmpty)
    }

    @Test func clientConfigurationsFollowTheBond() {
        var registry = BondRegistry([Self.bond()])
        let added = registry.setClientConfiguration(0x0002, handle: 0x0040, for: Self.appendixRPA)
        let cleared = registry.setClientConfiguration(0, handle: 0x002A, for: Self.appendixRPA)
        #expect(added && cleared)
        #expect(registry.bonds[0].clientConfigurations == [0x0031: 0x0002, 0x0040: 0x0002])
        let stranger = registry.setClientConfiguration(1, handle: 1, for: BluetoothAddress("11:22:33:44:55:66")!)
        #expect(!stranger)
    }

    @Test func theDatabaseHashFollowsTheBond() {
        var registry = BondRegistry([Self.bond(databaseHash: nil)])
        let newHash = hex("00112233445566778899aabbccddeeff")
        let set = registry.setDatabaseHash(newHash, for: Self.appendixRPA)
        #expect(set)
        #expect(registry.bonds[0].databaseHash == newHash)
        let stranger = registry.setDatabaseHash(newHash, for: BluetoothAddress("11:22:33:44:55:66")!)
        #expect(!stranger)
    }

    /// Client Supported Features follow the bond into the file; a bond without them writes none.
    @Test func clientSupportedFeaturesFollowTheBond() throws {
        var registry = BondRegistry([Self.bond(), Self.bond("C0:00:00:00:00:05", irk: nil)])
        let set = registry.setClientSupportedFeatures(0x01, for: Self.appendixRPA)
        let stranger = registry.setClientSupportedFeatures(0x01, for: BluetoothAddress("11:22:33:44:55:66")!)
        #expect(set && !stranger)
        #expect(registry.bond(for: Self.appendixRPA)?.clientSupportedFeatures == 0x01)
        #expect(registry.bonds.map(\.clientSupportedFeatures).sorted() == [0, 0x01])
        let scratch = try temporaryDirectory("bonds")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let store = BondStore(directory: scratch.appendingPathComponent("state").path)
        try store.save(registry)
        #expect(try store.load() == registry)
        let text = try String(contentsOfFile: store.path, encoding: .utf8)
        #expect(text.components(separatedBy: "clientSupportedFeatures").count == 2, "written once: \(text)")
    }

    @Test func roundTripsThroughAFileOfMode0600() throws {
        let scratch = try temporaryDirectory("bonds")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("state").path  // BondStore creates it
        let store = BondStore(directory: directory)
        #expect(try store.load().bonds.isEmpty)  // No file yet.

        // One bond with the Database Hash it last saw, one from a file written before it was kept.
        let saved = BondRegistry([Self.bond(), Self.bond("C0:00:00:00:00:03", irk: nil, databaseHash: nil)])
        try store.save(saved)
        #expect(try Self.mode(store.path) == 0o600)
        #expect(try Self.mode(directory) == 0o700)
        #expect(!FileManager.default.fileExists(atPath: store.path + ".tmp"))
        #expect(try store.load() == saved)

        var changed = saved
        changed.remove(Self.appendixRPA)
        try store.save(changed)
        #expect(try store.load() == changed)
        #expect(try Self.mode(store.path) == 0o600)
    }

    @Test func removeAndClearRewriteTheFile() throws {
        let scratch = try temporaryDirectory("bonds")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("state").path  // BondStore creates it
        let store = BondStore(directory: directory)
        try store.save(BondRegistry([Self.bond(), Self.bond("C0:00:00:00:00:04", irk: nil)]))
        #expect(try store.remove(Self.appendixRPA))  // Resolved to C0:11:22:33:44:55 by its IRK.
        #expect(try !store.remove(Self.appendixRPA))
        #expect(try store.load().bonds.map(\.identity.description) == ["C0:00:00:00:00:04"])
        try store.clear()
        #expect(try store.load().bonds.isEmpty)
        #expect(try Self.mode(store.path) == 0o600)
    }

    @Test func loadNarrowsAWideFileTo0600() throws {
        let scratch = try temporaryDirectory("bonds")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("state").path  // BondStore creates it
        let store = BondStore(directory: directory)
        try store.save(BondRegistry([Self.bond()]))
        chmod(store.path, 0o644)
        _ = try store.load()
        #expect(try Self.mode(store.path) == 0o600)
    }

    @Test func malformedFilesAreNamedWithoutShowingKeys() throws {
        let scratch = try temporaryDirectory("bonds")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("state").path  // BondStore creates it
        let store = BondStore(directory: directory)
        try store.save(BondRegistry([Self.bond()]))
        var text = try String(contentsOfFile: store.path, encoding: .utf8)
        text = text.replacingOccurrences(of: Self.ltkBytes.hexString, with: "6986791169d7cd23")
        try text.write(toFile: store.path, atomically: false, encoding: .utf8)
        #expect(throws: BondStore.Error.malformed(path: store.path, reason: "bond 0 has an invalid field")) {
            try store.load()
        }
        try "{\"version\": 1}".write(toFile: store.path, atomically: false, encoding: .utf8)
        #expect(throws: BondStore.Error.malformed(path: store.path, reason: "missing bonds")) { try store.load() }
    }

    @Test func descriptionsRedactEverySecret() {
        let bond = Self.bond()
        let texts = [
            "\(bond)", String(reflecting: bond), "\(bond.longTermKey)", String(reflecting: bond.longTermKey),
            "\(bond.peerIdentityResolvingKey!)", String(reflecting: bond.peerIdentityResolvingKey!),
            "\(BondRegistry([bond]))", String(reflecting: BondRegistry([bond])),
            "\(PairingOutcome(peer: bond.identity, identity: bond.identity, security: bond.security, bond: bond))"
        ]
        let secrets = [Self.ltkBytes, Self.appendixIRK.bytes, bond.localIdentityResolvingKey!.bytes, bond.peerSigningKey!.bytes]
        for text in texts {
            for secret in secrets {
                #expect(!text.lowercased().contains(secret.hexString.prefix(8)), "\(text)")
                // Arrays of decimal bytes, the default rendering of [UInt8].
                #expect(!text.contains(secret.prefix(3).map(String.init).joined(separator: ", ")), "\(text)")
            }
        }
        #expect("\(bond)".contains("C0:11:22:33:44:55"))
        #expect("\(bond)".contains("authenticated"))
    }
}
