import Testing

@testable import BluetoothCore

/// AES-CCM without associated data. The vectors: BTHome's encryption example
/// (https://bthome.io/encryption/), the ciphertext of NIST SP 800-38C Appendix C Example 1 (its
/// tag differs because that example has associated data), and the rest computed with
/// OpenSSL's CCM through Python's `cryptography` (`AESCCM(key, tag_length).encrypt(nonce, p, None)`),
/// the implementation bthome-ble and so Home Assistant decrypt with.
@Suite struct AESCCMTests {
    /// SP 800-38C's key 40…4F, nonce 10…1C, plaintext 20, 21, 22, … (its Example 3 pattern).
    static let key = [UInt8](0x40...0x4F)
    static let nonce = [UInt8](0x10...0x1C)
    static func plaintext(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(0x20 + $0) } }

    @Test func bthomeEncryptionExample() throws {
        let (ciphertext, mic) = try AESCCM.encrypt(
            [UInt8](hexString: "02CA0903BF13")!, key: [UInt8](hexString: "231d39c1d7cc1ab1aee224cd096db932")!,
            nonce: [UInt8](hexString: "5448e68f80a5d2fc4100112233")!, micLength: 4)
        #expect(ciphertext.hexString == "a47266c95f73")
        #expect(mic.hexString == "78237214")
    }

    @Test func nistExample1Ciphertext() throws {
        let (ciphertext, _) = try AESCCM.encrypt(
            [0x20, 0x21, 0x22, 0x23], key: Self.key, nonce: [UInt8](0x10...0x16), micLength: 4)
        #expect(ciphertext.hexString == "7162015b")
    }

    /// Empty, one byte, one block, a block and a byte, almost two blocks; MICs of 4, 8 and 16 bytes.
    @Test(arguments: [
        (0, 4, "", "2a0b1a47"),
        (1, 4, "69", "349d9f2e"),
        (16, 4, "69915dad1e84c6376a68c2967e4dab61", "c4630026"),
        (17, 4, "69915dad1e84c6376a68c2967e4dab615a", "e8aa4cc9"),
        (31, 4, "69915dad1e84c6376a68c2967e4dab615ae0fd1faec44cc484828529463ccf", "9e903e83"),
        (5, 8, "69915dad1e", "b5bd1facce62af35"),
        (20, 16, "69915dad1e84c6376a68c2967e4dab615ae0fd1f", "606db4442e4b9ee3e53f00321fad282b")
    ])
    func matchesOpenSSL(length: Int, micLength: Int, ciphertext: String, mic: String) throws {
        let result = try AESCCM.encrypt(Self.plaintext(length), key: Self.key, nonce: Self.nonce, micLength: micLength)
        #expect(result.ciphertext.hexString == ciphertext)
        #expect(result.mic.hexString == mic)
    }

    @Test func badParametersAreErrors() {
        #expect(throws: AESCCM.Error.keyMustBe16Bytes(15)) {
            try AESCCM.encrypt([], key: [UInt8](repeating: 0, count: 15), nonce: Self.nonce, micLength: 4)
        }
        #expect(throws: AESCCM.Error.nonceMustBe7To13Bytes(14)) {
            try AESCCM.encrypt([], key: Self.key, nonce: [UInt8](repeating: 0, count: 14), micLength: 4)
        }
        #expect(throws: AESCCM.Error.invalidMICLength(5)) {
            try AESCCM.encrypt([], key: Self.key, nonce: Self.nonce, micLength: 5)
        }
        #expect(throws: AESCCM.Error.messageTooLong(65_536)) {
            try AESCCM.encrypt(
                [UInt8](repeating: 0, count: 65_536), key: Self.key, nonce: Self.nonce, micLength: 4)
        }
    }
}
