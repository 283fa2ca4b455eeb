import Testing

@testable import BluetoothCore

/// RFC 4493 section 4 test vectors (also Core Vol 3 Part H D.1).
@Suite struct AESCMACTests {
    static let key = [UInt8](hexString: "2b7e151628aed2a6abf7158809cf4f3c")!
    static let message = [UInt8](
        hexString:
            "6bc1bee22e409f96e93d7e117393172a" + "ae2d8a571e03ac9c9eb76fac45af8e51" + "30c81c46a35ce411e5fbc1191a0a52ef"
            + "f69f2445df4f9b17ad2b417be66c3710")!

    @Test(arguments: [
        (0, "bb1d6929e95937287fa37d129b756746"),
        (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"),
        (64, "51f0bebf7e3b9d92fc49741779363cfe")
    ])
    func matchesRFC4493(length: Int, tag: String) throws {
        let mac = try AESCMAC.mac(Array(Self.message.prefix(length)), key: Self.key)
        #expect(mac.hexString == tag)
    }

    @Test func rejectsAWrongKeyLength() {
        #expect(throws: AESCMAC.Error.keyMustBe16Bytes(15)) {
            try AESCMAC.mac([], key: [UInt8](repeating: 0, count: 15))
        }
    }
}
