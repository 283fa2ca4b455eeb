import BluetoothCore
import Crypto

/// The cryptographic toolbox of the Security Manager (Core Vol 3 Part H 2.2), done in software
/// because virtual controllers answer neither LE Encrypt nor the P-256 commands.
///
/// Every value here is in the specification's notation: most significant byte first. SMP PDUs
/// carry the same values little-endian; the SMP layer reverses them at its edge.
public enum SecurityToolbox {
    public enum Error: Swift.Error, Equatable {
        case wrongLength(field: String, expected: Int, actual: Int)
        case invalidPublicKey
    }

    /// `e`: AES-128 of one block.
    public static func e(key: [UInt8], _ plaintext: [UInt8]) throws -> [UInt8] {
        try check(key, "key", 16)
        try check(plaintext, "plaintext", 16)
        return try AESCMAC.encryptBlock(plaintext, key: key)
    }

    /// `f4`: the LE Secure Connections confirm value, AES-CMAC_X(U || V || Z).
    public static func f4(u: [UInt8], v: [UInt8], x: [UInt8], z: UInt8) throws -> [UInt8] {
        try check(u, "U", 32)
        try check(v, "V", 32)
        try check(x, "X", 16)
        return try AESCMAC.mac(u + v + [z], key: x)
    }

    /// `f5`: derives (MacKey, LTK) from the DHKey W, both nonces and both 56-bit addresses
    /// (address type byte followed by the 48-bit address).
    public static func f5(
        w: [UInt8], n1: [UInt8], n2: [UInt8], a1: [UInt8], a2: [UInt8]
    ) throws
        -> (macKey: [UInt8], ltk: [UInt8])
    {
        try check(w, "W", 32)
        try check(n1, "N1", 16)
        try check(n2, "N2", 16)
        try check(a1, "A1", 7)
        try check(a2, "A2", 7)
        let salt: [UInt8] = [
            0x6C, 0x88, 0x83, 0x91, 0xAA, 0xF5, 0xA5, 0x38,
            0x60, 0x37, 0x0B, 0xDB, 0x5A, 0x60, 0x83, 0xBE
        ]
        let t = try AESCMAC.mac(w, key: salt)
        let keyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]  // "btle"
        let length: [UInt8] = [0x01, 0x00]  // 256 bits
        func derive(counter: UInt8) throws -> [UInt8] {
            try AESCMAC.mac([counter] + keyID + n1 + n2 + a1 + a2 + length, key: t)
        }
        return (try derive(counter: 0), try derive(counter: 1))
    }

    /// `f6`: the DHKey check value, AES-CMAC_W(N1 || N2 || R || IOcap || A1 || A2).
    public static func f6(
        w: [UInt8], n1: [UInt8], n2: [UInt8], r: [UInt8], ioCap: [UInt8],
        a1: [UInt8], a2: [UInt8]
    ) throws -> [UInt8] {
        try check(w, "W", 16)
        try check(n1, "N1", 16)
        try check(n2, "N2", 16)
        try check(r, "R", 16)
        try check(ioCap, "IOcap", 3)
        try check(a1, "A1", 7)
        try check(a2, "A2", 7)
        return try AESCMAC.mac(n1 + n2 + r + ioCap + a1 + a2, key: w)
    }

    /// `g2`: the numeric comparison value; shown to the user as its last six decimal digits.
    public static func g2(u: [UInt8], v: [UInt8], x: [UInt8], y: [UInt8]) throws -> UInt32 {
        try check(u, "U", 32)
        try check(v, "V", 32)
        try check(x, "X", 16)
        try check(y, "Y", 16)
        let mac = try AESCMAC.mac(u + v + y, key: x)
        return mac[12...].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// `h6`: link key conversion, AES-CMAC_W(keyID).
    public static func h6(w: [UInt8], keyID: [UInt8]) throws -> [UInt8] {
        try check(w, "W", 16)
        try check(keyID, "keyID", 4)
        return try AESCMAC.mac(keyID, key: w)
    }

    /// `h7`: link key conversion with a salt, AES-CMAC_SALT(W).
    public static func h7(salt: [UInt8], w: [UInt8]) throws -> [UInt8] {
        try check(salt, "SALT", 16)
        try check(w, "W", 16)
        return try AESCMAC.mac(w, key: salt)
    }

    /// `ah`: the random address hash: resolves a resolvable private address with an IRK.
    public static func ah(irk: [UInt8], prand: [UInt8]) throws -> [UInt8] {
        try check(irk, "IRK", 16)
        try check(prand, "prand", 3)
        let block = [UInt8](repeating: 0, count: 13) + prand
        return Array(try e(key: irk, block).suffix(3))
    }

    /// `c1`: the legacy pairing confirm value (only used when legacy pairing is allowed).
    /// `preq`/`pres` are the 7-byte Pairing Request/Response PDUs, most significant byte first.
    public static func c1(
        k: [UInt8], r: [UInt8], preq: [UInt8], pres: [UInt8],
        initiatorAddressType iat: UInt8, initiatorAddress ia: [UInt8],
        responderAddressType rat: UInt8, responderAddress ra: [UInt8]
    ) throws -> [UInt8] {
        try check(k, "k", 16)
        try check(r, "r", 16)
        try check(preq, "preq", 7)
        try check(pres, "pres", 7)
        try check(ia, "ia", 6)
        try check(ra, "ra", 6)
        let p1 = pres + preq + [rat & 1, iat & 1]
        let p2 = [UInt8](repeating: 0, count: 4) + ia + ra
        let first = try e(key: k, zip(r, p1).map { $0 ^ $1 })
        return try e(key: k, zip(first, p2).map { $0 ^ $1 })
    }

    /// `s1`: the legacy short-term key from the two random values.
    public static func s1(k: [UInt8], r1: [UInt8], r2: [UInt8]) throws -> [UInt8] {
        try check(k, "k", 16)
        try check(r1, "r1", 16)
        try check(r2, "r2", 16)
        return try e(key: k, Array(r1.suffix(8)) + Array(r2.suffix(8)))
    }

    /// P-256 Diffie-Hellman: the DHKey (x coordinate of the shared point) from our private key
    /// and the peer's public key, given as X and Y coordinates.
    public static func dhKey(privateKey: P256.KeyAgreement.PrivateKey, peerX: [UInt8], peerY: [UInt8]) throws -> [UInt8] {
        try check(peerX, "peer X", 32)
        try check(peerY, "peer Y", 32)
        let peer: P256.KeyAgreement.PublicKey
        do {
            peer = try P256.KeyAgreement.PublicKey(rawRepresentation: peerX + peerY)
        } catch {
            throw Error.invalidPublicKey
        }
        let secret = try privateKey.sharedSecretFromKeyAgreement(with: peer)
        return secret.withUnsafeBytes { Array($0) }
    }

    private static func check(_ value: [UInt8], _ field: String, _ count: Int) throws {
        guard value.count == count else {
            throw Error.wrongLength(field: field, expected: count, actual: value.count)
        }
    }
}
