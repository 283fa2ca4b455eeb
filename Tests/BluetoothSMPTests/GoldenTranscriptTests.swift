import BluetoothCore
import TestHarness
import Testing

@testable import BluetoothSMP

/// A recorded Passkey Entry pairing (passkey 123456, random seeds 1 for the gateway and 99 for
/// the central). Its values were checked independently of this code: Bumble 0.0.236's
/// `bumble.crypto` f4/f5/f6, fed the PDU bytes with Bumble's own conventions (little-endian
/// values, `preq[1:4]` as IOcap, address || type as A/B) and a DHKey computed by the Python
/// `cryptography` package, reproduced all 40 confirms, Ea, Eb and the LTK. The flow tests use an
/// initiator written here; this vector guards against both sides sharing one byte-order mistake.
@Suite struct GoldenTranscriptTests {

    @Test func passkeyPairingMatchesTheBumbleCheckedTranscript() throws {
        let manager = PairingFlowTests.manager(try SecurityConfiguration(ioCapability: .displayOnly, fixedPasskey: 123_456))
        var central = PairingFlowTests.central()
        let first = manager.receive(central.pairingRequest.encoded, on: 0x40, now: .zero)
        #expect(central.pairingRequest.encoded == hex("0104000d100303"))
        #expect(first.sent.first?.encoded == hex("0200000d100202"))
        guard case .pairingResponse(let response) = first.sent.first else { return }
        central.accept(response: response)
        let second = manager.receive(central.publicKeyPDU.encoded, on: 0x40, now: .zero)
        #expect(
            second.sent.first?.encoded
                == hex(
                    "0c177d8383640ac001cd7652d1283c018493c924232e90712a451f583fa72c85cb"
                        + "a24253cf770b12110bf7c036547a8bc9cf2f5971b6021f886d10b307b0fdd7ff"))
        try central.accept(publicKey: second.sent[0])
        var gatewayConfirms: [[UInt8]] = []
        for round in 0..<20 {
            let confirm = manager.receive(try central.passkeyConfirm(passkey: 123_456, round: round).encoded, on: 0x40, now: .zero)
            gatewayConfirms.append(confirm.sent.first?.encoded ?? [])
            try central.accept(confirm: try #require(confirm.sent.first))
            let random = manager.receive(SMPPDU.pairingRandom(central.na.reversed()).encoded, on: 0x40, now: .zero)
            _ = try central.verify(random: try #require(random.sent.first), z: 0)
        }
        #expect(gatewayConfirms[0] == hex("03ad578eb4f45548d3baeb1e06b1157b91"))
        #expect(gatewayConfirms[19] == hex("033eed09f148e5fb1746c0bb20057f1d0d"))
        let check = try central.dhKeyCheck(passkey: 123_456)
        #expect(check.encoded == hex("0d045623948a0430113275ab9091684d03"))
        let answer = manager.receive(check.encoded, on: 0x40, now: .zero)
        #expect(answer.sent.first?.encoded == hex("0d9ee96f239a2a2076ffc4c832f8aea772"))
        let ltk = try #require(manager.longTermKeyRequest(on: 0x40, ediv: 0, rand: 0))
        #expect(ltk.key.littleEndianBytes == hex("abad5b717b0e215f2127b9969e4c820a"))
    }
}
