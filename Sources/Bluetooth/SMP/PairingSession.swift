import BluetoothCore
import Crypto

extension PairingFailureReason: Error {}

/// What a pairing step asks of the user through the host.
enum PairingPrompt: Hashable, Sendable {
    case displayPasskey(UInt32)
    case requestPasskey
    case numericComparison(UInt32)
}

/// The keys and properties a finished pairing produced.
struct PairingKeys: Hashable, Sendable {
    var longTermKey: LongTermKey?
    var encryption: LongTermKey
    var bonding: Bool
    var peerIdentity: BluetoothAddress?
    var peerIdentityResolvingKey: SecretKey?
    var localIdentityResolvingKey: SecretKey?
    var peerSigningKey: SecretKey?
    var localSigningKey: SecretKey?
}

/// One responder-side pairing on one connection, from Pairing Request to the last distributed
/// key (Core Vol 3 Part H 2.3 and C.2). Values are kept most significant byte first (toolbox
/// notation); PDUs are little-endian, so every value is reversed where it enters or leaves.
///
/// A step either returns the PDUs to send, or throws the reason to send in Pairing Failed.
struct PairingSession: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    enum Phase: Hashable, Sendable {
        case awaitingPublicKey
        /// Just Works / Numeric Comparison: our confirm is out, waiting for the initiator's nonce.
        case awaitingRandom
        /// Numeric Comparison: waiting for the user; a DHKey Check that arrives meanwhile is held.
        case awaitingUserConfirmation(heldCheck: [UInt8]?)
        /// Passkey Entry round `round` (0..<20): waiting for the initiator's confirm.
        case awaitingPasskeyConfirm
        case awaitingPasskeyRandom
        case awaitingDHKeyCheck
        case legacyAwaitingConfirm
        case legacyAwaitingRandom
        /// The key is settled; the central starts encryption with it.
        case awaitingEncryption
        case awaitingPeerKeys
        case complete
    }

    let peer: BluetoothAddress
    let local: BluetoothAddress
    let request: PairingFeatures
    let response: PairingFeatures
    let secureConnections: Bool
    let model: AssociationModel
    let keySize: UInt8
    let bonding: Bool
    let configuration: SecurityConfiguration
    private(set) var phase: Phase

    private var passkey: UInt32?
    /// A confirm that arrived before the user typed the passkey.
    private var heldConfirm: [UInt8]?
    private var localX: [UInt8] = []
    private var peerX: [UInt8] = []
    private var dhKey: [UInt8] = []
    private var localNonce: [UInt8] = []
    private var peerNonce: [UInt8] = []
    private var peerConfirm: [UInt8] = []
    private var round = 0
    private var macKey: [UInt8] = []
    /// The key the central encrypts this connection with: the SC LTK or the legacy STK.
    private(set) var encryptionKey: LongTermKey?
    private var expectedPeerKeys: [SMPCode] = []
    private var keys: PairingKeys?

    /// Never the keys, nonces or DHKey.
    var description: String { "PairingSession(\(peer), \(model), \(secureConnections ? "SC" : "legacy"), \(phase))" }
    var debugDescription: String { description }

    // MARK: Phase 1: features exchange

    /// Starts a pairing from the central's Pairing Request; returns the session and its Pairing Response.
    static func start(
        request: PairingFeatures, peer: BluetoothAddress, local: BluetoothAddress,
        configuration: SecurityConfiguration, random: inout some PairingRandomSource
    )
        throws(PairingFailureReason) -> (PairingSession, [SMPPDU], [PairingPrompt])
    {
        let secureConnections = request.authentication.contains(.secureConnections)
        guard secureConnections || configuration.allowLegacy else { throw .authenticationRequirements }
        // The gateway never publishes OOB data, so a central claiming to hold it is mistaken.
        if secureConnections && request.oobDataPresent { throw .oobNotAvailable }
        let keySize = min(request.maximumKeySize, 16)
        guard keySize >= configuration.minimumKeySize else { throw .encryptionKeySize }

        let bonding = configuration.bondable && request.authentication.rawValue & 0x03 == 0x01
        var authentication: AuthenticationRequirements = [.secureConnections]
        if bonding { authentication.insert(.bonding) }
        if configuration.ioCapability != .noInputNoOutput { authentication.insert(.mitm) }
        var accepted: KeyDistribution = [.identityKey]
        if configuration.signingKeys { accepted.insert(.signingKey) }
        // We never act as central, so a central's legacy LTK would never be used: not asked for.
        let initiatorKeys = bonding ? request.initiatorKeys.intersection(accepted) : []
        if !secureConnections { accepted.insert(.encryptionKey) }
        let responderKeys = bonding ? request.responderKeys.intersection(accepted) : []
        let response = PairingFeatures(
            ioCapability: configuration.ioCapability, oobDataPresent: false, authentication: authentication,
            maximumKeySize: 16, initiatorKeys: initiatorKeys, responderKeys: responderKeys)

        let model = AssociationModel.select(
            initiator: request.ioCapability, responder: configuration.ioCapability,
            mitmRequested: request.authentication.contains(.mitm) || authentication.contains(.mitm),
            secureConnections: secureConnections)
        var session = PairingSession(
            peer: peer, local: local, request: request, response: response,
            secureConnections: secureConnections, model: model, keySize: keySize, bonding: bonding,
            configuration: configuration,
            phase: secureConnections ? .awaitingPublicKey : .legacyAwaitingConfirm)
        var prompts: [PairingPrompt] = []
        switch model {
        case .passkeyDisplay:
            let passkey = configuration.fixedPasskey ?? Self.randomPasskey(&random)
            session.passkey = passkey
            prompts.append(.displayPasskey(passkey))
        case .passkeyInput:
            prompts.append(.requestPasskey)
        case .justWorks:
            if !secureConnections { session.passkey = 0 }  // legacy Just Works: TK = 0
        case .numericComparison:
            break
        }
        return (session, [.pairingResponse(response)], prompts)
    }

    // MARK: Phase 2

    /// Handles one PDU of the pairing (Pairing Request/Failed/Keypress are the manager's).
    mutating func handle(
        _ pdu: SMPPDU, random: inout some PairingRandomSource
    )
        throws(PairingFailureReason) -> ([SMPPDU], [PairingPrompt])
    {
        switch (phase, pdu) {
        case (.awaitingPublicKey, .pairingPublicKey(let x, let y)):
            return try receivePublicKey(x: x.reversed(), y: y.reversed(), random: &random)
        case (.awaitingRandom, .pairingRandom(let value)):
            peerNonce = value.reversed()
            let sends: [SMPPDU] = [.pairingRandom(localNonce.reversed())]
            guard model == .numericComparison else {
                phase = .awaitingDHKeyCheck
                return (sends, [])
            }
            let value = try orFail(SecurityToolbox.g2(u: peerX, v: localX, x: peerNonce, y: localNonce))
            phase = .awaitingUserConfirmation(heldCheck: nil)
            return (sends, [.numericComparison(value % 1_000_000)])
        case (.awaitingUserConfirmation(nil), .pairingDHKeyCheck(let value)):
            phase = .awaitingUserConfirmation(heldCheck: value.reversed())
            return ([], [])
        case (.awaitingPasskeyConfirm, .pairingConfirm(let value)):
            guard passkey != nil else {
                heldConfirm = value.reversed()
                return ([], [])
            }
            return (try receivePasskeyConfirm(value.reversed(), random: &random), [])
        case (.awaitingPasskeyRandom, .pairingRandom(let value)):
            return (try receivePasskeyRandom(value.reversed()), [])
        case (.awaitingDHKeyCheck, .pairingDHKeyCheck(let value)):
            return (try checkDHKey(value.reversed()), [])
        case (.legacyAwaitingConfirm, .pairingConfirm(let value)):
            guard passkey != nil else {
                heldConfirm = value.reversed()
                return ([], [])
            }
            return (try receiveLegacyConfirm(value.reversed(), random: &random), [])
        case (.legacyAwaitingRandom, .pairingRandom(let value)):
            return (try receiveLegacyRandom(value.reversed()), [])
        case (.awaitingPeerKeys, _):
            try receivePeerKey(pdu)
            return ([], [])
        default:
            // A command out of sequence (Vol 3 Part H 3.5): the pairing cannot continue.
            throw .unspecifiedReason
        }
    }

    /// The user's answer to Numeric Comparison.
    mutating func confirmNumericComparison(_ accepted: Bool) throws(PairingFailureReason) -> [SMPPDU] {
        guard case .awaitingUserConfirmation(let held) = phase else { return [] }
        guard accepted else { throw .numericComparisonFailed }
        phase = .awaitingDHKeyCheck
        guard let held else { return [] }
        return try checkDHKey(held)
    }

    /// The passkey the user typed (nil: cancelled).
    mutating func enterPasskey(
        _ value: UInt32?, random: inout some PairingRandomSource
    )
        throws(PairingFailureReason) -> [SMPPDU]
    {
        guard model == .passkeyInput, passkey == nil else { return [] }
        guard let value, value <= 999_999 else { throw .passkeyEntryFailed }
        passkey = value
        guard let held = heldConfirm else { return [] }
        heldConfirm = nil
        switch phase {
        case .awaitingPasskeyConfirm: return try receivePasskeyConfirm(held, random: &random)
        case .legacyAwaitingConfirm: return try receiveLegacyConfirm(held, random: &random)
        default: return []
        }
    }

    private mutating func receivePublicKey(
        x: [UInt8], y: [UInt8], random: inout some PairingRandomSource
    )
        throws(PairingFailureReason) -> ([SMPPDU], [PairingPrompt])
    {
        // A fresh key pair per pairing; the private key is dropped once the DHKey is computed.
        let key = Self.makePrivateKey(&random)
        let raw = Array(key.publicKey.rawRepresentation)
        localX = Array(raw[..<32])
        // A peer echoing our own key is the reflection attack of erratum 11838; an invalid point
        // fails pairing with DHKey Check Failed (Vol 3 Part H 2.3.5.6.1).
        guard x != localX else { throw .dhKeyCheckFailed }
        do {
            dhKey = try SecurityToolbox.dhKey(privateKey: key, peerX: x, peerY: y)
        } catch {
            throw .dhKeyCheckFailed
        }
        peerX = x
        var sends: [SMPPDU] = [.pairingPublicKey(x: localX.reversed(), y: Array(raw[32...]).reversed())]
        switch model {
        case .justWorks, .numericComparison:
            localNonce = random.bytes(16)
            let confirm = try orFail(SecurityToolbox.f4(u: localX, v: peerX, x: localNonce, z: 0))
            sends.append(.pairingConfirm(confirm.reversed()))
            phase = .awaitingRandom
        case .passkeyDisplay, .passkeyInput:
            phase = .awaitingPasskeyConfirm
        }
        return (sends, [])
    }

    private var passkeyBit: UInt8 { 0x80 | UInt8((passkey! >> UInt32(round)) & 1) }

    private mutating func receivePasskeyConfirm(
        _ confirm: [UInt8], random: inout some PairingRandomSource
    )
        throws(PairingFailureReason) -> [SMPPDU]
    {
        peerConfirm = confirm
        localNonce = random.bytes(16)
        let ours = try orFail(SecurityToolbox.f4(u: localX, v: peerX, x: localNonce, z: passkeyBit))
        phase = .awaitingPasskeyRandom
        return [.pairingConfirm(ours.reversed())]
    }

    private mutating func receivePasskeyRandom(_ nonce: [UInt8]) throws(PairingFailureReason) -> [SMPPDU] {
        let expected = try orFail(SecurityToolbox.f4(u: peerX, v: localX, x: nonce, z: passkeyBit))
        guard expected == peerConfirm else { throw .confirmValueFailed }
        peerNonce = nonce
        round += 1
        phase = round == 20 ? .awaitingDHKeyCheck : .awaitingPasskeyConfirm
        return [.pairingRandom(localNonce.reversed())]
    }

    private var peerAddressField: [UInt8] { [peer.kind.rawValue] + peer.bytes.reversed() }
    private var localAddressField: [UInt8] { [local.kind.rawValue] + local.bytes.reversed() }

    /// Phase 2 end: derives MacKey/LTK (f5), checks Ea and answers Eb (f6).
    private mutating func checkDHKey(_ check: [UInt8]) throws(PairingFailureReason) -> [SMPPDU] {
        let (macKey, ltk) = try orFail(
            SecurityToolbox.f5(
                w: dhKey, n1: peerNonce, n2: localNonce, a1: peerAddressField, a2: localAddressField))
        let r =
            model == .passkeyDisplay || model == .passkeyInput
            ? [UInt8](repeating: 0, count: 12) + Self.bigEndian(passkey!) : [UInt8](repeating: 0, count: 16)
        let expected = try orFail(
            SecurityToolbox.f6(
                w: macKey, n1: peerNonce, n2: localNonce, r: r, ioCap: request.f6IOCap,
                a1: peerAddressField, a2: localAddressField))
        guard expected == check else { throw .dhKeyCheckFailed }
        let ours = try orFail(
            SecurityToolbox.f6(
                w: macKey, n1: localNonce, n2: peerNonce, r: r, ioCap: response.f6IOCap,
                a1: localAddressField, a2: peerAddressField))
        self.macKey = macKey
        encryptionKey = LongTermKey(
            key: SecretKey(mostSignificantFirst: masked(ltk)), keySize: keySize,
            authenticated: model.isAuthenticated, secureConnections: true)
        phase = .awaitingEncryption
        return [.pairingDHKeyCheck(ours.reversed())]
    }

    // MARK: Legacy phase 2 (only with allowLegacy)

    private var temporaryKey: [UInt8] { [UInt8](repeating: 0, count: 12) + Self.bigEndian(passkey!) }

    private func legacyConfirm(_ random: [UInt8]) throws(PairingFailureReason) -> [UInt8] {
        try orFail(
            SecurityToolbox.c1(
                k: temporaryKey, r: random, preq: SMPPDU.pairingRequest(request).encoded.reversed(),
                pres: SMPPDU.pairingResponse(response).encoded.reversed(),
                initiatorAddressType: peer.kind.rawValue, initiatorAddress: peer.bytes.reversed(),
                responderAddressType: local.kind.rawValue, responderAddress: local.bytes.reversed()))
    }

    private mutating func receiveLegacyConfirm(
        _ confirm: [UInt8], random: inout some PairingRandomSource
    )
        throws(PairingFailureReason) -> [SMPPDU]
    {
        peerConfirm = confirm
        localNonce = random.bytes(16)
        phase = .legacyAwaitingRandom
        return [.pairingConfirm(try legacyConfirm(localNonce).reversed())]
    }

    private mutating func receiveLegacyRandom(_ nonce: [UInt8]) throws(PairingFailureReason) -> [SMPPDU] {
        guard try legacyConfirm(nonce) == peerConfirm else { throw .confirmValueFailed }
        let stk = try orFail(SecurityToolbox.s1(k: temporaryKey, r1: localNonce, r2: nonce))
        encryptionKey = LongTermKey(
            key: SecretKey(mostSignificantFirst: masked(stk)), keySize: keySize,
            authenticated: model.isAuthenticated, secureConnections: false)
        phase = .awaitingEncryption
        return [.pairingRandom(localNonce.reversed())]
    }

    // MARK: Phase 3: key distribution (the responder sends first, Vol 3 Part H 3.6.1)

    /// The link is now encrypted with `encryptionKey`: sends our keys, then waits for the central's.
    mutating func linkEncrypted(localIdentity: BluetoothAddress, random: inout some PairingRandomSource) -> [SMPPDU] {
        guard phase == .awaitingEncryption, let encryptionKey else { return [] }
        var keys = PairingKeys(
            longTermKey: secureConnections ? encryptionKey : nil,
            encryption: encryptionKey, bonding: bonding)
        var sends: [SMPPDU] = []
        let distributed = response.responderKeys
        if !secureConnections && distributed.contains(.encryptionKey) {
            let ltk = LongTermKey(
                key: SecretKey(mostSignificantFirst: masked(random.bytes(16))),
                ediv: UInt16(littleEndianBytes: random.bytes(2)), rand: UInt64(littleEndianBytes: random.bytes(8)),
                keySize: keySize, authenticated: model.isAuthenticated, secureConnections: false)
            keys.longTermKey = ltk
            sends += [
                .encryptionInformation(longTermKey: ltk.key.littleEndianBytes),
                .centralIdentification(ediv: ltk.ediv, rand: ltk.rand)
            ]
        }
        if distributed.contains(.identityKey) {
            let irk = configuration.localIdentityResolvingKey ?? SecretKey(mostSignificantFirst: random.bytes(16))
            keys.localIdentityResolvingKey = irk
            sends += [
                .identityInformation(identityResolvingKey: irk.littleEndianBytes),
                .identityAddressInformation(localIdentity)
            ]
        }
        if distributed.contains(.signingKey) {
            let csrk = SecretKey(mostSignificantFirst: random.bytes(16))
            keys.localSigningKey = csrk
            sends.append(.signingInformation(signatureKey: csrk.littleEndianBytes))
        }
        self.keys = keys
        if response.initiatorKeys.contains(.identityKey) {
            expectedPeerKeys += [.identityInformation, .identityAddressInformation]
        }
        if response.initiatorKeys.contains(.signingKey) { expectedPeerKeys.append(.signingInformation) }
        phase = expectedPeerKeys.isEmpty ? .complete : .awaitingPeerKeys
        return sends
    }

    /// The finished pairing's keys, once phase 3 is done.
    var result: PairingKeys? { phase == .complete ? keys : nil }

    private mutating func receivePeerKey(_ pdu: SMPPDU) throws(PairingFailureReason) {
        guard pdu.code == expectedPeerKeys.first else { throw .unspecifiedReason }
        expectedPeerKeys.removeFirst()
        switch pdu {
        case .identityInformation(let irk):
            keys?.peerIdentityResolvingKey = SecretKey(littleEndianBytes: irk)
        case .identityAddressInformation(let address):
            // An identity address is public or static random (Vol 3 Part H 3.6.5); anything else
            // cannot identify the central later, so the connection address stays its name.
            if address.kind == .public || address.isStaticRandom { keys?.peerIdentity = address }
        case .signingInformation(let csrk):
            keys?.peerSigningKey = SecretKey(littleEndianBytes: csrk)
        default:
            throw .unspecifiedReason
        }
        if expectedPeerKeys.isEmpty { phase = .complete }
    }

    // MARK: Helpers

    /// Shortens a key to the negotiated size by zeroing its most significant octets (Vol 3 Part H 2.3.4).
    private func masked(_ key: [UInt8]) -> [UInt8] {
        [UInt8](repeating: 0, count: 16 - Int(keySize)) + key.suffix(Int(keySize))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// A uniformly drawn passkey 000000...999999 (rejection sampling avoids modulo bias).
    static func randomPasskey(_ random: inout some PairingRandomSource) -> UInt32 {
        while true {
            let value = UInt32(littleEndianBytes: random.bytes(4))
            if value < 4_294_000_000 { return value % 1_000_000 }
        }
    }

    /// A P-256 private key from the injected randomness; a draw outside the curve order is redrawn.
    static func makePrivateKey(_ random: inout some PairingRandomSource) -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: random.bytes(32)) { return key }
        }
    }

    /// The toolbox only throws on wrong lengths, which the codec already excludes.
    private func orFail<T>(_ body: @autoclosure () throws -> T) throws(PairingFailureReason) -> T {
        do { return try body() } catch { throw .unspecifiedReason }
    }
}

extension FixedWidthInteger {
    init(littleEndianBytes bytes: [UInt8]) {
        self = bytes.reversed().reduce(0) { $0 << 8 | Self($1) }
    }
}
