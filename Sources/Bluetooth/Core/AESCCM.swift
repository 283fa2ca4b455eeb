/// AES-128 in CCM mode (NIST SP 800-38C, RFC 3610) without associated data: the encryption behind
/// BTHome's encrypted advertisements (https://bthome.io/encryption/). swift-crypto offers no CCM,
/// so it is built here on the single-block AES that `AESCMAC` uses.
public enum AESCCM {
    public enum Error: Swift.Error, Equatable {
        case keyMustBe16Bytes(Int)
        /// CCM nonces are 7 to 13 bytes (SP 800-38C A.1).
        case nonceMustBe7To13Bytes(Int)
        /// The MIC is 4, 6, 8, 10, 12, 14 or 16 bytes.
        case invalidMICLength(Int)
        /// The message is longer than the length field the nonce leaves room for.
        case messageTooLong(Int)
    }

    /// The ciphertext (as long as `plaintext`) and the MIC of `micLength` bytes.
    public static func encrypt(
        _ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], micLength: Int
    ) throws -> (ciphertext: [UInt8], mic: [UInt8]) {
        guard key.count == 16 else { throw Error.keyMustBe16Bytes(key.count) }
        guard (7...13).contains(nonce.count) else { throw Error.nonceMustBe7To13Bytes(nonce.count) }
        guard (4...16).contains(micLength), micLength % 2 == 0 else { throw Error.invalidMICLength(micLength) }
        // The counter and length fields take the 15 - nonce bytes the nonce leaves in a block.
        let lengthSize = 15 - nonce.count
        guard lengthSize >= 8 || plaintext.count < 1 << (8 * lengthSize) else {
            throw Error.messageTooLong(plaintext.count)
        }

        // CBC-MAC over B0 (flags, nonce, message length) and the message padded with zeros.
        let flags = UInt8((micLength - 2) / 2) << 3 | UInt8(lengthSize - 1)
        var mac = try AESCMAC.encryptBlock(
            [flags] + nonce + bigEndian(plaintext.count, size: lengthSize), key: key)
        for start in stride(from: 0, to: plaintext.count, by: 16) {
            var block = Array(plaintext[start..<min(start + 16, plaintext.count)])
            block += [UInt8](repeating: 0, count: 16 - block.count)
            mac = try AESCMAC.encryptBlock(zip(mac, block).map { $0 ^ $1 }, key: key)
        }

        // CTR mode: counter block i is (flags L-1, nonce, i); block 0 encrypts the MIC.
        func keystream(_ index: Int) throws -> [UInt8] {
            try AESCMAC.encryptBlock([UInt8(lengthSize - 1)] + nonce + bigEndian(index, size: lengthSize), key: key)
        }
        var ciphertext: [UInt8] = []
        ciphertext.reserveCapacity(plaintext.count)
        for (blockIndex, start) in stride(from: 0, to: plaintext.count, by: 16).enumerated() {
            let stream = try keystream(blockIndex + 1)
            for offset in start..<min(start + 16, plaintext.count) {
                ciphertext.append(plaintext[offset] ^ stream[offset - start])
            }
        }
        let mic = zip(mac.prefix(micLength), try keystream(0)).map { $0 ^ $1 }
        return (ciphertext, mic)
    }

    /// `value` in `size` bytes, most significant first (CCM's byte order).
    private static func bigEndian(_ value: Int, size: Int) -> [UInt8] {
        (0..<size).reversed().map { $0 >= 8 ? 0 : UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
