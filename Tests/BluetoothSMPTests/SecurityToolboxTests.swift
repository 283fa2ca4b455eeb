import Crypto
import Testing

@testable import BluetoothSMP

/// The sample data of Core Vol 3 Part H Appendix D (values most significant byte first).
@Suite struct SecurityToolboxTests {

    static let u = hex("20b003d2 f297be2c 5e2c83a7 e9f9a5b9 eff49111 acf4fddb cc030148 0e359de6")
    static let v = hex("55188b3d 32f6bb9a 900afcfb eed4e72a 59cb9ac2 f19d7cfb 6b4fdd49 f47fc5fd")
    static let n1 = hex("d5cb8454 d177733e ffffb2ec 712baeab")
    static let n2 = hex("a6e8e7cc 25a75f6e 216583f7 ff3dc4cf")
    static let dhKey = hex("ec0234a3 57c8ad05 341010a6 0a397d9b 99796b13 b4f866f1 868d34f3 73bfa698")
    static let a1 = hex("00561237 37bfce")
    static let a2 = hex("00a71370 2dcfc1")

    @Test func f4() throws {
        let value = try SecurityToolbox.f4(u: Self.u, v: Self.v, x: Self.n1, z: 0)
        #expect(value.hexString == "f2c916f107a9bd1cf1eda1bea974872d")
    }

    @Test func f5() throws {
        let (macKey, ltk) = try SecurityToolbox.f5(w: Self.dhKey, n1: Self.n1, n2: Self.n2, a1: Self.a1, a2: Self.a2)
        #expect(macKey.hexString == "2965f176a1084a02fd3f6a20ce636e20")
        #expect(ltk.hexString == "6986791169d7cd23980522b594750a38")
    }

    @Test func f6() throws {
        let value = try SecurityToolbox.f6(
            w: hex("2965f176 a1084a02 fd3f6a20 ce636e20"), n1: Self.n1, n2: Self.n2,
            r: hex("12a3343b b453bb54 08da42d2 0c2d0fc8"), ioCap: hex("010102"),
            a1: Self.a1, a2: Self.a2)
        #expect(value.hexString == "e3c473989cd0e8c5d26c0b09da958f61")
    }

    @Test func g2() throws {
        let value = try SecurityToolbox.g2(u: Self.u, v: Self.v, x: Self.n1, y: Self.n2)
        #expect(value == 0x2F9E_D5BA)
    }

    @Test func h6AndH7() throws {
        let key = hex("ec0234a3 57c8ad05 341010a6 0a397d9b")
        #expect(
            try SecurityToolbox.h6(w: key, keyID: hex("6c656272")).hexString
                == "2d9ae102e76dc91ce8d3a9e280b16399")
        #expect(
            try SecurityToolbox.h7(salt: hex("00000000 00000000 00000000 746D7031"), w: key).hexString
                == "fb173597c6a3c0ecd2998c2a75a57011")
    }

    @Test func ah() throws {
        let value = try SecurityToolbox.ah(irk: hex("ec0234a3 57c8ad05 341010a6 0a397d9b"), prand: hex("708194"))
        #expect(value.hexString == "0dfbaa")
    }

    @Test func legacyC1AndS1() throws {
        let confirm = try SecurityToolbox.c1(
            k: [UInt8](repeating: 0, count: 16), r: hex("5783D52156AD6F0E6388274EC6702EE0"),
            preq: hex("07071000000101"), pres: hex("05000800000302"),
            initiatorAddressType: 1, initiatorAddress: hex("A1A2A3A4A5A6"),
            responderAddressType: 0, responderAddress: hex("B1B2B3B4B5B6"))
        #expect(confirm.hexString == "1e1e3fef878988ead2a74dc5bef13b86")
        let stk = try SecurityToolbox.s1(
            k: [UInt8](repeating: 0, count: 16), r1: hex("000F0E0D0C0B0A091122334455667788"),
            r2: hex("010203040506070899AABBCCDDEEFF00"))
        #expect(stk.hexString == "9a1fe1f0e8b0f49b5b4216ae796da062")
    }

    @Test func p256DHKeyMatchesTheSampleData() throws {
        let privateA = try P256.KeyAgreement.PrivateKey(
            rawRepresentation:
                hex("3f49f6d4 a3c55f38 74c9b3e3 d2103f50 4aff607b eb40b799 5899b8a6 cd3c1abd"))
        let bX = hex("1ea1f0f0 1faf1d96 09592284 f19e4c00 47b58afd 8615a69f 559077b2 2faaa190")
        let bY = hex("4c55f33e 429dad37 7356703a 9ab85160 472d1130 e28e3676 5f89aff9 15b1214a")
        #expect(try SecurityToolbox.dhKey(privateKey: privateA, peerX: bX, peerY: bY) == Self.dhKey)
        #expect(throws: SecurityToolbox.Error.invalidPublicKey) {
            try SecurityToolbox.dhKey(privateKey: privateA, peerX: bX, peerY: [UInt8](repeating: 1, count: 32))
        }
    }

    @Test func rejectsWrongLengths() {
        #expect(throws: SecurityToolbox.Error.wrongLength(field: "X", expected: 16, actual: 15)) {
            try SecurityToolbox.f4(u: Self.u, v: Self.v, x: Array(Self.n1.prefix(15)), z: 0)
        }
    }
}
