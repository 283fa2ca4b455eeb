import BluetoothCore
import Crypto
import LoopClock
import TestHarness
import Testing

@testable import BluetoothSMP

/// Reproducible randomness (SplitMix64), so every pairing in the tests replays exactly.
struct SeededRandom: PairingRandomSource {
    var generator: SplitMix64

    init(seed: UInt64) { generator = SplitMix64(seed: seed) }

    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }
}

/// The initiator side of LE Secure Connections and legacy pairing, written in the test from
/// Core Vol 3 Part H 2.3.5.6 / C.2 (Appendix C sequences) with the same toolbox, so the gateway's
/// responder is checked against an independent implementation of the other end.
struct TestCentral {
    let address: BluetoothAddress
    let gateway: BluetoothAddress
    let handle: UInt16 = 0x0040
    var features: PairingFeatures
    var random: SeededRandom
    let privateKey: P256.KeyAgreement.PrivateKey
    let identity: BluetoothAddress
    let identityResolvingKey: SecretKey

    private(set) var response: PairingFeatures?
    private(set) var gatewayX: [UInt8] = []
    private(set) var dhKey: [UInt8] = []
    private(set) var ltk: [UInt8] = []
    private(set) var macKey: [UInt8] = []
    private(set) var na: [UInt8] = []
    private(set) var nb: [UInt8] = []
    private var gatewayConfirm: [UInt8] = []

    init(
        address: BluetoothAddress, gateway: BluetoothAddress, features: PairingFeatures, seed: UInt64,
        identity: BluetoothAddress = BluetoothAddress("C0:11:22:33:44:55", kind: .random)!,
        identityResolvingKey: SecretKey = SecretKey(mostSignificantFirst: [UInt8](repeating: 0x5A, count: 16))
    ) {
        self.address = address
        self.gateway = gateway
        self.features = features
        random = SeededRandom(seed: seed)
        privateKey = PairingSession.makePrivateKey(&random)
        self.identity = identity
        self.identityResolvingKey = identityResolvingKey
    }

    var publicX: [UInt8] { Array(privateKey.publicKey.rawRepresentation.prefix(32)) }
    var publicY: [UInt8] { Array(privateKey.publicKey.rawRepresentation.suffix(32)) }
    var addressField: [UInt8] { [address.kind.rawValue] + address.bytes.reversed() }
    var gatewayField: [UInt8] { [gateway.kind.rawValue] + gateway.bytes.reversed() }

    var pairingRequest: SMPPDU { .pairingRequest(features) }
    var publicKeyPDU: SMPPDU { .pairingPublicKey(x: publicX.reversed(), y: publicY.reversed()) }

    /// Takes the gateway's Pairing Response and public key.
    mutating func accept(response: PairingFeatures) { self.response = response }

    mutating func accept(publicKey pdu: SMPPDU) throws {
        guard case .pairingPublicKey(let x, let y) = pdu else { throw Failure("expected a public key, got \(pdu)") }
        gatewayX = x.reversed()
        dhKey = try SecurityToolbox.dhKey(privateKey: privateKey, peerX: x.reversed(), peerY: y.reversed())
    }

    mutating func accept(confirm pdu: SMPPDU) throws {
        guard case .pairingConfirm(let value) = pdu else { throw Failure("expected a confirm, got \(pdu)") }
        gatewayConfirm = value.reversed()
    }

    /// Just Works / Numeric Comparison: our nonce Na.
    mutating func nonce() -> SMPPDU {
        na = random.bytes(16)
        return .pairingRandom(na.reversed())
    }

    /// Checks Cb = f4(PKbx, PKax, Nb, z) once Nb is known.
    mutating func verify(random pdu: SMPPDU, z: UInt8) throws -> Bool {
        guard case .pairingRandom(let value) = pdu else { throw Failure("expected a random, got \(pdu)") }
        nb = value.reversed()
        return try SecurityToolbox.f4(u: gatewayX, v: publicX, x: nb, z: z) == gatewayConfirm
    }

    /// Passkey round i: Cai = f4(PKax, PKbx, Nai, 0x80 | ri).
    mutating func passkeyConfirm(passkey: UInt32, round: Int) throws -> SMPPDU {
        na = random.bytes(16)
        let bit = 0x80 | UInt8((passkey >> UInt32(round)) & 1)
        return .pairingConfirm(try SecurityToolbox.f4(u: publicX, v: gatewayX, x: na, z: bit).reversed())
    }

    func passkeyBit(_ passkey: UInt32, round: Int) -> UInt8 { 0x80 | UInt8((passkey >> UInt32(round)) & 1) }

    static func r(passkey: UInt32?) -> [UInt8] {
        guard let passkey else { return [UInt8](repeating: 0, count: 16) }
        return [UInt8](repeating: 0, count: 12)
            + [UInt8(passkey >> 24), UInt8(passkey >> 16 & 0xFF), UInt8(passkey >> 8 & 0xFF), UInt8(passkey & 0xFF)]
    }

    /// Ea = f6(MacKey, Na, Nb, rb, IOcapA, A, B), after deriving MacKey and LTK with f5.
    mutating func dhKeyCheck(passkey: UInt32?) throws -> SMPPDU {
        (macKey, ltk) = try SecurityToolbox.f5(w: dhKey, n1: na, n2: nb, a1: addressField, a2: gatewayField)
        let ea = try SecurityToolbox.f6(
            w: macKey, n1: na, n2: nb, r: Self.r(passkey: passkey),
            ioCap: features.f6IOCap, a1: addressField, a2: gatewayField)
        return .pairingDHKeyCheck(ea.reversed())
    }

    /// Eb = f6(MacKey, Nb, Na, ra, IOcapB, B, A).
    func verify(dhKeyCheck pdu: SMPPDU, passkey: UInt32?) throws -> Bool {
        guard case .pairingDHKeyCheck(let value) = pdu, let response else { return false }
        let eb = try SecurityToolbox.f6(
            w: macKey, n1: nb, n2: na, r: Self.r(passkey: passkey),
            ioCap: response.f6IOCap, a1: gatewayField, a2: addressField)
        return eb == value.reversed()
    }

    /// Phase 3: the central's identity keys.
    var identityKeys: [SMPPDU] {
        [
            .identityInformation(identityResolvingKey: identityResolvingKey.littleEndianBytes),
            .identityAddressInformation(identity)
        ]
    }

    // MARK: Legacy (c1/s1)

    private(set) var mrand: [UInt8] = []

    mutating func legacyConfirm(tk: [UInt8]) throws -> SMPPDU {
        mrand = random.bytes(16)
        return .pairingConfirm(try c1(tk: tk, rand: mrand).reversed())
    }

    func c1(tk: [UInt8], rand: [UInt8]) throws -> [UInt8] {
        try SecurityToolbox.c1(
            k: tk, r: rand, preq: pairingRequest.encoded.reversed(),
            pres: SMPPDU.pairingResponse(response!).encoded.reversed(),
            initiatorAddressType: address.kind.rawValue, initiatorAddress: address.bytes.reversed(),
            responderAddressType: gateway.kind.rawValue, responderAddress: gateway.bytes.reversed())
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

extension [SecurityManager.Action] {
    var sent: [SMPPDU] {
        compactMap { if case .send(_, let pdu) = $0 { pdu } else { nil } }
    }

    var events: [SecurityEvent] {
        compactMap { if case .event(let event) = $0 { event } else { nil } }
    }
}

/// The manager behind a reference, so a test can call its mutating methods inside `#expect`.
final class Gateway {
    var manager: SecurityManager

    init(_ manager: SecurityManager) { self.manager = manager }

    var bonds: BondRegistry { manager.bonds }
    var nextDeadline: LoopInstant? { manager.nextDeadline }
    func connectionOpened(_ handle: UInt16, peer: BluetoothAddress, local: BluetoothAddress) {
        manager.connectionOpened(handle, peer: peer, local: local)
    }
    func connectionClosed(_ handle: UInt16) { manager.connectionClosed(handle) }
    func receive(_ bytes: [UInt8], on handle: UInt16, now: LoopInstant) -> [SecurityManager.Action] {
        manager.receive(bytes, on: handle, now: now)
    }
    func enterPasskey(_ passkey: UInt32?, on handle: UInt16, now: LoopInstant) -> [SecurityManager.Action] {
        manager.enterPasskey(passkey, on: handle, now: now)
    }
    func confirmNumericComparison(on handle: UInt16, accepted: Bool, now: LoopInstant) -> [SecurityManager.Action] {
        manager.confirmNumericComparison(on: handle, accepted: accepted, now: now)
    }
    func longTermKeyRequest(on handle: UInt16, ediv: UInt16, rand: UInt64) -> LongTermKey? {
        manager.longTermKeyRequest(on: handle, ediv: ediv, rand: rand)
    }
    func encryptionChanged(on handle: UInt16, enabled: Bool, now: LoopInstant) -> [SecurityManager.Action] {
        manager.encryptionChanged(on: handle, enabled: enabled, now: now)
    }
    func requestSecurity(on handle: UInt16, authenticated: Bool, now: LoopInstant) -> [SecurityManager.Action] {
        manager.requestSecurity(on: handle, authenticated: authenticated, now: now)
    }
    func expireTimers(now: LoopInstant) -> [SecurityManager.Action] { manager.expireTimers(now: now) }
    func setClientConfiguration(_ value: UInt16, handle attribute: UInt16, on handle: UInt16) -> Bool {
        manager.setClientConfiguration(value, handle: attribute, on: handle)
    }
    func linkEncryption(on handle: UInt16) -> LinkEncryption? { manager.linkEncryption(on: handle) }
    func bond(on handle: UInt16) -> Bond? { manager.bond(on: handle) }
    func isPairing(on handle: UInt16) -> Bool { manager.isPairing(on: handle) }
}
