import BluetoothCore

/// A 128-bit key (LTK, IRK, CSRK) in the specification's notation, most significant byte first.
///
/// The type exists so key material cannot leak by accident: `description` and `debugDescription`
/// never show the bytes, and the byte order at each edge is explicit (`littleEndianBytes` for
/// SMP PDUs and the HCI LE Long Term Key Request Reply).
public struct SecretKey: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public let bytes: [UInt8]

    public init(mostSignificantFirst bytes: [UInt8]) {
        precondition(bytes.count == 16, "a key has 16 bytes")
        self.bytes = bytes
    }

    /// Parses 32 hex digits, most significant byte first (bond file, configuration); nil otherwise.
    public init?(hexString text: String) {
        guard let bytes = [UInt8](hexString: text), bytes.count == 16 else { return nil }
        self.init(mostSignificantFirst: bytes)
    }

    public init(littleEndianBytes bytes: [UInt8]) {
        self.init(mostSignificantFirst: bytes.reversed())
    }

    public var littleEndianBytes: [UInt8] { bytes.reversed() }

    public var description: String { "<redacted key>" }
    public var debugDescription: String { description }
}

/// Where the randomness of pairing comes from (nonces, private keys, passkeys, distributed keys).
/// Injected so tests replay a pairing exactly; the service uses `SystemRandomSource`.
public protocol PairingRandomSource: Sendable {
    mutating func bytes(_ count: Int) -> [UInt8]
}

/// The operating system's cryptographically secure generator.
public struct SystemRandomSource: PairingRandomSource {
    public init() {}

    public mutating func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }
}
