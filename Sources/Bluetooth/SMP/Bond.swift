import BluetoothCore

/// What protects an encrypted link: the answer to "may this peer read an `authenticated`
/// characteristic?".
public struct LinkEncryption: Hashable, Sendable {
    /// Encryption key size in octets (7...16).
    public var keySize: UInt8
    /// The key came from an authenticated (MITM-protected) association model.
    public var authenticated: Bool
    /// The key came from LE Secure Connections pairing.
    public var secureConnections: Bool
    /// The key is stored in a bond (survives reconnection).
    public var bonded: Bool

    public init(keySize: UInt8, authenticated: Bool, secureConnections: Bool, bonded: Bool) {
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
        self.bonded = bonded
    }
}

/// A Long Term Key with what the host needs to answer HCI LE Long Term Key Request: EDIV and
/// Rand identify it (both 0 for Secure Connections keys) and its properties say how strong it is.
public struct LongTermKey: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public var key: SecretKey
    public var ediv: UInt16
    public var rand: UInt64
    public var keySize: UInt8
    public var authenticated: Bool
    public var secureConnections: Bool

    public init(
        key: SecretKey, ediv: UInt16 = 0, rand: UInt64 = 0, keySize: UInt8,
        authenticated: Bool, secureConnections: Bool
    ) {
        self.key = key
        self.ediv = ediv
        self.rand = rand
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
    }

    /// Whether a LE Long Term Key Request with these EDIV/Rand asks for this key.
    public func matches(ediv: UInt16, rand: UInt64) -> Bool { self.ediv == ediv && self.rand == rand }

    public var description: String {
        "LTK(<redacted>, keySize: \(keySize), authenticated: \(authenticated), "
            + "secureConnections: \(secureConnections))"
    }

    public var debugDescription: String { description }
}

/// The keys kept for one bonded central, plus the Client Characteristic Configuration values it
/// had written, so its subscriptions come back on reconnection.
public struct Bond: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The central's identity address (public or static random), or the address it paired from
    /// when it distributed no identity.
    public var identity: BluetoothAddress
    public var longTermKey: LongTermKey
    public var peerIdentityResolvingKey: SecretKey?
    /// The IRK the gateway gave this central, if it asked for one.
    public var localIdentityResolvingKey: SecretKey?
    public var peerSigningKey: SecretKey?
    public var localSigningKey: SecretKey?
    /// CCCD attribute handle → value (0x0001 notify, 0x0002 indicate).
    public var clientConfigurations: [UInt16: UInt16]
    /// The Database Hash of the attribute database this central last saw on a bonded link (nil
    /// for a bond stored before gattway kept it): a different hash on reconnection means its
    /// attribute cache and its `clientConfigurations` handles are stale.
    public var databaseHash: [UInt8]?
    /// The Client Supported Features the central wrote (robust caching and the rest; Vol 3 Part
    /// G 7.2: persistent across connections for a bonded client), 0 when it wrote none.
    public var clientSupportedFeatures: UInt8

    public init(
        identity: BluetoothAddress, longTermKey: LongTermKey,
        peerIdentityResolvingKey: SecretKey? = nil, localIdentityResolvingKey: SecretKey? = nil,
        peerSigningKey: SecretKey? = nil, localSigningKey: SecretKey? = nil,
        clientConfigurations: [UInt16: UInt16] = [:], databaseHash: [UInt8]? = nil,
        clientSupportedFeatures: UInt8 = 0
    ) {
        self.identity = identity
        self.longTermKey = longTermKey
        self.peerIdentityResolvingKey = peerIdentityResolvingKey
        self.localIdentityResolvingKey = localIdentityResolvingKey
        self.peerSigningKey = peerSigningKey
        self.localSigningKey = localSigningKey
        self.clientConfigurations = clientConfigurations
        self.databaseHash = databaseHash
        self.clientSupportedFeatures = clientSupportedFeatures
    }

    public var security: LinkEncryption {
        LinkEncryption(
            keySize: longTermKey.keySize, authenticated: longTermKey.authenticated,
            secureConnections: longTermKey.secureConnections, bonded: true)
    }

    /// Whether `address` is this central: its identity, or a resolvable private address
    /// generated from its IRK (Vol 6 Part B 1.3.2.3, `ah` of Vol 3 Part H 2.2.2).
    public func matches(_ address: BluetoothAddress) -> Bool {
        if address == identity { return true }
        guard address.isResolvablePrivate, let irk = peerIdentityResolvingKey else { return false }
        let prand = Array(address.bytes[3...].reversed())
        let hash = Array(address.bytes[..<3].reversed())
        return (try? SecurityToolbox.ah(irk: irk.bytes, prand: prand)) == hash
    }

    /// For `gattway bonds list` and logs: the address and the key's strength, never the keys.
    public var description: String {
        let kind = identity.kind == .public ? "public" : "random"
        var parts = [
            "\(identity) (\(kind))", "keySize \(longTermKey.keySize)",
            longTermKey.authenticated ? "authenticated" : "unauthenticated",
            longTermKey.secureConnections ? "LE Secure Connections" : "legacy"
        ]
        if peerIdentityResolvingKey != nil { parts.append("IRK") }
        if peerSigningKey != nil { parts.append("CSRK") }
        parts.append("\(clientConfigurations.count) subscriptions")
        return parts.joined(separator: ", ")
    }

    public var debugDescription: String { description }
}

/// The bonds in memory: lookup by address (resolving private addresses), insert, remove.
/// Pure; `BondStore` persists it.
public struct BondRegistry: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Ordered by identity address so listings and the stored file are stable.
    public private(set) var bonds: [Bond]

    public init(_ bonds: [Bond] = []) {
        self.bonds = []
        for bond in bonds { insert(bond) }
    }

    /// The bond of the central using `address`: its identity address or a private address
    /// resolved with each stored IRK.
    public func bond(for address: BluetoothAddress) -> Bond? {
        bonds.first { $0.identity == address } ?? bonds.first { $0.matches(address) }
    }

    /// Adds a bond, replacing any bond with the same identity (a re-pairing).
    public mutating func insert(_ bond: Bond) {
        bonds.removeAll { $0.identity == bond.identity }
        bonds.append(bond)
        bonds.sort { ($0.identity.description, $0.identity.kind.rawValue) < ($1.identity.description, $1.identity.kind.rawValue) }
    }

    /// Removes the bond of `address` (identity or resolvable); false when there was none.
    @discardableResult
    public mutating func remove(_ address: BluetoothAddress) -> Bool {
        guard let bond = bond(for: address) else { return false }
        bonds.removeAll { $0.identity == bond.identity }
        return true
    }

    public mutating func removeAll() { bonds.removeAll() }

    public var description: String { "\(bonds.count) bonds: " + bonds.map(\.description).joined(separator: "; ") }
    public var debugDescription: String { description }

    /// Records the Database Hash a bonded central now knows; false when `address` has no bond.
    @discardableResult
    public mutating func setDatabaseHash(_ hash: [UInt8], for address: BluetoothAddress) -> Bool {
        guard let bond = bond(for: address), let index = bonds.firstIndex(where: { $0.identity == bond.identity }) else {
            return false
        }
        bonds[index].databaseHash = hash
        return true
    }

    /// Records the Client Supported Features a bonded central wrote; false when `address` has no bond.
    @discardableResult
    public mutating func setClientSupportedFeatures(_ features: UInt8, for address: BluetoothAddress) -> Bool {
        guard let bond = bond(for: address), let index = bonds.firstIndex(where: { $0.identity == bond.identity }) else {
            return false
        }
        bonds[index].clientSupportedFeatures = features
        return true
    }

    /// Records a CCCD write of a bonded central; false when `address` has no bond.
    @discardableResult
    public mutating func setClientConfiguration(_ value: UInt16, handle: UInt16, for address: BluetoothAddress) -> Bool {
        guard let bond = bond(for: address), let index = bonds.firstIndex(where: { $0.identity == bond.identity }) else {
            return false
        }
        if value == 0 {
            bonds[index].clientConfigurations[handle] = nil
        } else {
            bonds[index].clientConfigurations[handle] = value
        }
        return true
    }
}
