import BluetoothCore
import LoopClock
import TestHarness
import Testing

@testable import BluetoothSMP

/// Whole pairings between the gateway (responder) and `TestCentral` (initiator).
@Suite struct PairingFlowTests {
    static let gatewayAddress = BluetoothAddress("DC:A6:32:00:00:01")!
    static let centralAddress = BluetoothAddress("C0:11:22:33:44:55", kind: .random)!
    static let handle: UInt16 = 0x0040

    static func features(
        io: IOCapability = .keyboardDisplay,
        auth: AuthenticationRequirements = [.bonding, .mitm, .secureConnections],
        keySize: UInt8 = 16
    ) -> PairingFeatures {
        PairingFeatures(
            ioCapability: io, authentication: auth, maximumKeySize: keySize,
            initiatorKeys: [.encryptionKey, .identityKey], responderKeys: [.encryptionKey, .identityKey])
    }

    static func manager(
        _ configuration: SecurityConfiguration = .standard, seed: UInt64 = 1
    )
        -> Gateway
    {
        let manager = Gateway(SecurityManager(configuration: configuration, random: SeededRandom(seed: seed)))
        manager.connectionOpened(handle, peer: centralAddress, local: gatewayAddress)
        return manager
    }

    static func central(
        _ features: PairingFeatures = features(), seed: UInt64 = 99,
        address: BluetoothAddress = centralAddress
    ) -> TestCentral {
        TestCentral(address: address, gateway: gatewayAddress, features: features, seed: seed)
    }

    /// Phase 1 and the public key exchange; returns what the gateway sent after our public key.
    static func exchangeKeys(
        _ manager: Gateway, _ central: inout TestCentral, now: LoopInstant = .zero
    )
        throws -> [SecurityManager.Action]
    {
        let first = manager.receive(central.pairingRequest.encoded, on: handle, now: now)
        guard case .pairingResponse(let response) = first.sent.first else {
            throw TestCentral.Failure("no Pairing Response: \(first)")
        }
        central.accept(response: response)
        let second = manager.receive(central.publicKeyPDU.encoded, on: handle, now: now)
        try central.accept(publicKey: second.sent[0])
        return first + second
    }

    /// Phase 3 after the DHKey checks: encryption with the LTK, then both sides' keys.
    static func finish(_ manager: Gateway, _ central: TestCentral) throws -> PairingOutcome {
        let key = try #require(manager.longTermKeyRequest(on: handle, ediv: 0, rand: 0))
        #expect(key.key.bytes == central.ltk)
        let distributed = manager.encryptionChanged(on: handle, enabled: true, now: .seconds(1))
        #expect(distributed.sent.count == 2)
        guard case .identityAddressInformation(let identity) = distributed.sent.last else {
            throw TestCentral.Failure("no identity address: \(distributed)")
        }
        #expect(identity == gatewayAddress)
        var actions: [SecurityManager.Action] = []
        for pdu in central.identityKeys {
            actions += manager.receive(pdu.encoded, on: handle, now: .seconds(1))
        }
        guard case .pairingComplete(_, let outcome) = actions.events.last else {
            throw TestCentral.Failure("not complete: \(actions)")
        }
        return outcome
    }

    // MARK: Just Works

    @Test func justWorksPairsAndBonds() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput))
        let keys = try Self.exchangeKeys(manager, &central)
        #expect(keys.events.isEmpty)
        try central.accept(confirm: keys.sent[2])
        let random = manager.receive(central.nonce().encoded, on: Self.handle, now: .zero)
        #expect(try central.verify(random: random.sent[0], z: 0))
        let check = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        #expect(try central.verify(dhKeyCheck: check.sent[0], passkey: nil))

        let outcome = try Self.finish(manager, central)
        #expect(outcome.identity == central.identity)
        #expect(outcome.security == LinkEncryption(keySize: 16, authenticated: false, secureConnections: true, bonded: true))
        let bond = try #require(outcome.bond)
        #expect(bond.longTermKey.key.bytes == central.ltk)
        #expect(bond.longTermKey.ediv == 0 && bond.longTermKey.rand == 0)
        #expect(bond.peerIdentityResolvingKey == central.identityResolvingKey)
        #expect(bond.localIdentityResolvingKey != nil)
        #expect(manager.bonds.bonds == [bond])
        #expect(manager.linkEncryption(on: Self.handle)?.bonded == true)
        #expect(!manager.isPairing(on: Self.handle))
        #expect(manager.nextDeadline == nil)
        _ = manager.encryptionChanged(on: Self.handle, enabled: false, now: .seconds(2))
        #expect(manager.linkEncryption(on: Self.handle) == nil)
    }

    /// Runs a whole Just Works pairing and returns the outcome.
    static func pairJustWorks(_ manager: Gateway, _ central: inout TestCentral) throws -> PairingOutcome {
        let keys = try exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: handle, now: .zero).sent[0], z: 0))
        let check = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: handle, now: .zero)
        #expect(try central.verify(dhKeyCheck: check.sent[0], passkey: nil))
        return try finish(manager, central)
    }

    @Test func shorterKeySizeMasksTheLTK() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput, minimumKeySize: 7))
        var central = Self.central(Self.features(io: .noInputNoOutput, keySize: 12))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        _ = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        let key = try #require(manager.longTermKeyRequest(on: Self.handle, ediv: 0, rand: 0))
        #expect(key.keySize == 12)
        #expect(key.key.bytes == [0, 0, 0, 0] + central.ltk.suffix(12))
    }

    @Test func signingKeysAreExchangedWhenConfigured() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput, signingKeys: true))
        var features = Self.features(io: .noInputNoOutput)
        features.initiatorKeys = [.identityKey, .signingKey]
        features.responderKeys = [.identityKey, .signingKey]
        var central = Self.central(features)
        let keys = try Self.exchangeKeys(manager, &central)
        #expect(central.response?.responderKeys == [.identityKey, .signingKey])
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        _ = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        _ = manager.longTermKeyRequest(on: Self.handle, ediv: 0, rand: 0)
        let ours = manager.encryptionChanged(on: Self.handle, enabled: true, now: .zero).sent
        #expect(ours.map(\.code) == [.identityInformation, .identityAddressInformation, .signingInformation])
        let csrk = [UInt8](repeating: 0xC5, count: 16)
        var done: [SecurityManager.Action] = []
        // In the order of Vol 3 Part H 3.6.1: IRK, identity address, CSRK.
        for pdu in central.identityKeys + [.signingInformation(signatureKey: csrk)] {
            done += manager.receive(pdu.encoded, on: Self.handle, now: .zero)
        }
        guard case .pairingComplete(_, let outcome) = done.events.last, let bond = outcome.bond else {
            Issue.record("\(done)")
            return
        }
        #expect(bond.peerSigningKey == SecretKey(littleEndianBytes: csrk))
        guard case .signingInformation(let local) = ours.last else {
            Issue.record("the gateway's last key PDU is not its CSRK: \(ours)")
            return
        }
        #expect(bond.localSigningKey == SecretKey(littleEndianBytes: local))
    }

    @Test func keysOutOfOrderFailThePairing() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        _ = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        _ = manager.longTermKeyRequest(on: Self.handle, ediv: 0, rand: 0)
        _ = manager.encryptionChanged(on: Self.handle, enabled: true, now: .zero)
        let wrong = manager.receive(central.identityKeys[1].encoded, on: Self.handle, now: .zero)
        #expect(wrong.sent == [.pairingFailed(.unspecifiedReason)])
    }

    @Test func rePairingKeepsTheSubscriptionsOfTheSameIdentity() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput))
        _ = try Self.pairJustWorks(manager, &central)
        #expect(manager.setClientConfiguration(0x0002, handle: 0x0030, on: Self.handle))
        manager.connectionClosed(Self.handle)
        manager.connectionOpened(Self.handle, peer: Self.centralAddress, local: Self.gatewayAddress)
        var again = Self.central(Self.features(io: .noInputNoOutput), seed: 7)
        let outcome = try Self.pairJustWorks(manager, &again)
        #expect(outcome.bond?.clientConfigurations == [0x0030: 0x0002])
        #expect(outcome.bond?.longTermKey.key.bytes == again.ltk)
        #expect(manager.bonds.bonds.count == 1)
    }

    /// A central that connects from a static random address but distributes another identity
    /// (a public one): the link still knows its bond, so its CCCD writes reach the bond.
    @Test func theBondOfALinkIsFoundThroughTheIdentityItDistributed() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        let identity = BluetoothAddress("F0:5A:00:6F:00:02")!
        var central = TestCentral(
            address: Self.centralAddress, gateway: Self.gatewayAddress,
            features: Self.features(io: .noInputNoOutput), seed: 99, identity: identity)
        let outcome = try Self.pairJustWorks(manager, &central)
        #expect(outcome.identity == identity)
        #expect(manager.bond(on: Self.handle)?.identity == identity)
        #expect(manager.setClientConfiguration(0x0001, handle: 0x0017, on: Self.handle))
        #expect(manager.bonds.bonds.first?.clientConfigurations == [0x0017: 0x0001])
    }

    @Test func managerDescriptionNeverShowsPairingSecrets() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        _ = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        let texts = ["\(manager.manager)", String(reflecting: manager.manager)]
        for text in texts {
            for secret in [central.dhKey, central.ltk, central.nb] {
                #expect(!text.contains(secret.hexString.prefix(8)), "\(text)")
                #expect(!text.contains(secret.prefix(3).map(String.init).joined(separator: ", ")), "\(text)")
            }
        }
    }

    @Test func keypressNotificationsAreAccepted() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayOnly))
        _ = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .zero)
        #expect(manager.receive([0x0E, 0x01], on: Self.handle, now: .zero).isEmpty)
        #expect(manager.isPairing(on: Self.handle))
    }

    @Test func pairingResponseAdvertisesOurFeaturesAndMasksKeys() throws {
        let manager = Self.manager()
        var features = Self.features()
        features.initiatorKeys = [.encryptionKey, .identityKey, .signingKey, .linkKey]
        features.responderKeys = [.encryptionKey, .identityKey, .signingKey, .linkKey]
        let actions = manager.receive(SMPPDU.pairingRequest(features).encoded, on: Self.handle, now: .zero)
        // SC: no LTK distributed (it is derived), no CSRK unless configured, never the BR/EDR link key.
        #expect(
            actions.sent.first
                == .pairingResponse(
                    PairingFeatures(
                        ioCapability: .displayOnly, authentication: [.bonding, .mitm, .secureConnections],
                        maximumKeySize: 16, initiatorKeys: [.identityKey], responderKeys: [.identityKey])))
    }

    @Test func noBondingWhenTheCentralDoesNotAskForIt() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput, auth: [.secureConnections]))
        let keys = try Self.exchangeKeys(manager, &central)
        #expect(central.response?.initiatorKeys == [] && central.response?.responderKeys == [])
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        _ = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        _ = manager.longTermKeyRequest(on: Self.handle, ediv: 0, rand: 0)
        let done = manager.encryptionChanged(on: Self.handle, enabled: true, now: .zero)
        guard case .pairingComplete(_, let outcome) = done.events.first else {
            Issue.record("\(done)")
            return
        }
        #expect(outcome.bond == nil && !outcome.security.bonded)
        #expect(manager.bonds.bonds.isEmpty)
    }

    // MARK: Passkey Entry

    /// Runs the 20 rounds of Passkey Entry with `passkey` as the central's typed value.
    static func passkeyRounds(
        _ manager: Gateway, _ central: inout TestCentral, passkey: UInt32
    )
        throws -> [SecurityManager.Action]
    {
        for round in 0..<20 {
            let confirm = manager.receive(
                try central.passkeyConfirm(passkey: passkey, round: round).encoded,
                on: handle, now: .zero)
            guard confirm.sent.count == 1, case .pairingConfirm = confirm.sent[0] else { return confirm }
            try central.accept(confirm: confirm.sent[0])
            let random = manager.receive(SMPPDU.pairingRandom(central.na.reversed()).encoded, on: handle, now: .zero)
            guard random.sent.count == 1, case .pairingRandom = random.sent[0] else { return random }
            #expect(try central.verify(random: random.sent[0], z: central.passkeyBit(passkey, round: round)))
        }
        return []
    }

    @Test func passkeyEntryWithADisplayedRandomPasskey() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayOnly))
        var central = Self.central()
        let keys = try Self.exchangeKeys(manager, &central)
        guard case .displayPasskey(Self.handle, Self.centralAddress, let passkey) = keys.events.first else {
            Issue.record("no passkey shown: \(keys)")
            return
        }
        #expect(passkey <= 999_999)
        #expect(keys.sent.count == 2)  // Pairing Response and our public key; the central confirms first.
        #expect(try Self.passkeyRounds(manager, &central, passkey: passkey).isEmpty)
        let check = manager.receive(try central.dhKeyCheck(passkey: passkey).encoded, on: Self.handle, now: .zero)
        #expect(try central.verify(dhKeyCheck: check.sent[0], passkey: passkey))
        let outcome = try Self.finish(manager, central)
        #expect(outcome.security.authenticated && outcome.security.secureConnections)
        #expect(outcome.bond?.longTermKey.authenticated == true)
    }

    @Test func passkeysDifferBetweenPairings() throws {
        var shown: Set<UInt32> = []
        for seed in UInt64(1)...5 {
            let manager = Self.manager(seed: seed)
            let actions = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .zero)
            if case .displayPasskey(_, _, let passkey) = actions.events.first { shown.insert(passkey) }
        }
        #expect(shown.count == 5)
    }

    @Test func fixedPasskeyFromConfiguration() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayOnly, fixedPasskey: 4_711))
        var central = Self.central()
        let keys = try Self.exchangeKeys(manager, &central)
        #expect(keys.events == [.displayPasskey(Self.handle, peer: Self.centralAddress, passkey: 4_711)])
        #expect("\(keys.events[0])".contains("004711"))
        #expect(try Self.passkeyRounds(manager, &central, passkey: 4_711).isEmpty)
        let check = manager.receive(try central.dhKeyCheck(passkey: 4_711).encoded, on: Self.handle, now: .zero)
        #expect(try central.verify(dhKeyCheck: check.sent[0], passkey: 4_711))
    }

    @Test func wrongPasskeyFailsWithConfirmValueFailed() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayOnly, fixedPasskey: 123_456))
        var central = Self.central()
        _ = try Self.exchangeKeys(manager, &central)
        // 123457 differs from 123456 in bit 0: round 0 already fails.
        let failed = try Self.passkeyRounds(manager, &central, passkey: 123_457)
        #expect(failed.sent == [.pairingFailed(.confirmValueFailed)])
        #expect(failed.events == [.pairingFailed(Self.handle, peer: Self.centralAddress, .sent(.confirmValueFailed))])
        #expect(!manager.isPairing(on: Self.handle))
    }

    @Test func passkeyTypedIntoTheGateway() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .keyboardOnly))
        var central = Self.central(Self.features(io: .displayOnly))
        let keys = try Self.exchangeKeys(manager, &central)
        #expect(keys.events == [.passkeyRequested(Self.handle, peer: Self.centralAddress)])
        // The central's first confirm arrives before the user typed: held, then answered.
        let early = manager.receive(try central.passkeyConfirm(passkey: 987_654, round: 0).encoded, on: Self.handle, now: .zero)
        #expect(early.isEmpty)
        let typed = manager.enterPasskey(987_654, on: Self.handle, now: .zero)
        try central.accept(confirm: try #require(typed.sent.first))
        let random = manager.receive(SMPPDU.pairingRandom(central.na.reversed()).encoded, on: Self.handle, now: .zero)
        #expect(try central.verify(random: random.sent[0], z: central.passkeyBit(987_654, round: 0)))
    }

    @Test func cancelledPasskeyEntryFailsWithPasskeyEntryFailed() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .keyboardOnly))
        var central = Self.central(Self.features(io: .displayOnly))
        _ = try Self.exchangeKeys(manager, &central)
        #expect(manager.enterPasskey(nil, on: Self.handle, now: .zero).sent == [.pairingFailed(.passkeyEntryFailed)])
    }

    // MARK: Numeric Comparison

    @Test func numericComparisonConfirmedThroughTheAPI() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayYesNo))
        var central = Self.central(Self.features(io: .displayYesNo))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        let random = manager.receive(central.nonce().encoded, on: Self.handle, now: .zero)
        #expect(try central.verify(random: random.sent[0], z: 0))
        let expected = try SecurityToolbox.g2(u: central.publicX, v: central.gatewayX, x: central.na, y: central.nb) % 1_000_000
        #expect(random.events == [.numericComparison(Self.handle, peer: Self.centralAddress, value: expected)])
        // Ea arrives before the user answered: no Eb until the user confirms.
        let held = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        #expect(held.isEmpty)
        let confirmed = manager.confirmNumericComparison(on: Self.handle, accepted: true, now: .zero)
        #expect(try central.verify(dhKeyCheck: confirmed.sent[0], passkey: nil))
        let outcome = try Self.finish(manager, central)
        #expect(outcome.security.authenticated)
    }

    @Test func rejectedNumericComparisonFails() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayYesNo))
        var central = Self.central(Self.features(io: .displayYesNo))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        let rejected = manager.confirmNumericComparison(on: Self.handle, accepted: false, now: .zero)
        #expect(rejected.sent == [.pairingFailed(.numericComparisonFailed)])
    }

    // MARK: Failures

    @Test func badDHKeyCheckFailsWithDHKeyCheckFailed() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        // Ea computed as if a passkey had been used: wrong.
        let check = manager.receive(try central.dhKeyCheck(passkey: 1).encoded, on: Self.handle, now: .zero)
        #expect(check.sent == [.pairingFailed(.dhKeyCheckFailed)])
        #expect(manager.longTermKeyRequest(on: Self.handle, ediv: 0, rand: 0) == nil)
    }

    @Test func invalidPublicKeyFailsWithDHKeyCheckFailed() throws {
        let manager = Self.manager()
        let central = Self.central()
        _ = manager.receive(central.pairingRequest.encoded, on: Self.handle, now: .zero)
        let bad = SMPPDU.pairingPublicKey(x: [UInt8](repeating: 1, count: 32), y: [UInt8](repeating: 2, count: 32))
        #expect(manager.receive(bad.encoded, on: Self.handle, now: .zero).sent == [.pairingFailed(.dhKeyCheckFailed)])
    }

    @Test func legacyPairingIsRefusedByDefault() {
        let manager = Self.manager()
        let request = SMPPDU.pairingRequest(Self.features(auth: [.bonding, .mitm]))
        let actions = manager.receive(request.encoded, on: Self.handle, now: .zero)
        #expect(actions.sent == [.pairingFailed(.authenticationRequirements)])
        #expect(actions.events == [.pairingFailed(Self.handle, peer: Self.centralAddress, .sent(.authenticationRequirements))])
    }

    @Test func keySizeBelowTheMinimumIsRefused() {
        let manager = Self.manager()
        let actions = manager.receive(SMPPDU.pairingRequest(Self.features(keySize: 10)).encoded, on: Self.handle, now: .zero)
        #expect(actions.sent == [.pairingFailed(.encryptionKeySize)])
    }

    @Test func malformedAndUnexpectedPDUs() {
        let manager = Self.manager()
        // Reserved code: ignored (Vol 3 Part H 3.3).
        #expect(manager.receive([0x0F, 0x00], on: Self.handle, now: .zero).isEmpty)
        // Wrong length: Invalid Parameters.
        #expect(manager.receive([0x01, 0x04, 0x00], on: Self.handle, now: .zero).sent == [.pairingFailed(.invalidParameters)])
        // Commands only a central receives: Command Not Supported.
        #expect(manager.receive([0x0B, 0x0D], on: Self.handle, now: .zero).sent == [.pairingFailed(.commandNotSupported)])
        // A confirm with no pairing under way: out of sequence.
        let confirm = SMPPDU.pairingConfirm([UInt8](repeating: 0, count: 16)).encoded
        #expect(manager.receive(confirm, on: Self.handle, now: .zero).sent == [.pairingFailed(.unspecifiedReason)])
        // A second Pairing Request in the middle of a pairing.
        let request = Self.central().pairingRequest.encoded
        _ = manager.receive(request, on: Self.handle, now: .zero)
        #expect(manager.receive(request, on: Self.handle, now: .zero).sent == [.pairingFailed(.unspecifiedReason)])
        // Unknown connection: nothing.
        #expect(manager.receive(request, on: 0x0999, now: .zero).isEmpty)
    }

    @Test func pairingFailedFromTheCentralEndsThePairing() {
        let manager = Self.manager()
        _ = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .zero)
        let actions = manager.receive(SMPPDU.pairingFailed(.passkeyEntryFailed).encoded, on: Self.handle, now: .zero)
        #expect(actions.sent.isEmpty)
        #expect(actions.events == [.pairingFailed(Self.handle, peer: Self.centralAddress, .received(.passkeyEntryFailed))])
        #expect(!manager.isPairing(on: Self.handle))
    }

    // MARK: Repeated attempts

    /// One failed passkey attempt at `now`.
    static func failOnce(_ manager: Gateway, now: LoopInstant) throws -> [SecurityManager.Action] {
        var central = central()
        let first = manager.receive(central.pairingRequest.encoded, on: handle, now: now)
        guard case .pairingResponse(let response) = first.sent.first else { return first }
        central.accept(response: response)
        let keys = manager.receive(central.publicKeyPDU.encoded, on: handle, now: now)
        try central.accept(publicKey: keys.sent[0])
        let confirm = manager.receive(try central.passkeyConfirm(passkey: 1, round: 0).encoded, on: handle, now: now)
        try central.accept(confirm: confirm.sent[0])
        return manager.receive(SMPPDU.pairingRandom(central.na.reversed()).encoded, on: handle, now: now)
    }

    @Test func repeatedAttemptsBackOffExponentially() throws {
        let manager = Self.manager(
            try SecurityConfiguration(
                ioCapability: .displayOnly, fixedPasskey: 2,
                backoffBase: .seconds(2), backoffMaximum: .seconds(10)))
        #expect(try Self.failOnce(manager, now: .seconds(0)).sent == [.pairingFailed(.confirmValueFailed)])
        // Within 2 s: Repeated Attempts, without extending the wait.
        let early = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .seconds(1))
        #expect(early.sent == [.pairingFailed(.repeatedAttempts)])
        #expect(try Self.failOnce(manager, now: .seconds(2)).sent == [.pairingFailed(.confirmValueFailed)])
        // Second failure: 4 s.
        #expect(
            manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .milliseconds(5_999)).sent
                == [.pairingFailed(.repeatedAttempts)])
        #expect(try Self.failOnce(manager, now: .seconds(6)).sent == [.pairingFailed(.confirmValueFailed)])
        // Third: 8 s; fourth would be 16 s but is capped at 10 s.
        #expect(try Self.failOnce(manager, now: .seconds(14)).sent == [.pairingFailed(.confirmValueFailed)])
        #expect(
            manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .milliseconds(23_999)).sent
                == [.pairingFailed(.repeatedAttempts)])
        // No Security Request while the peer must wait.
        #expect(manager.requestSecurity(on: Self.handle, authenticated: true, now: .seconds(20)).isEmpty)
        let later = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .seconds(24))
        guard case .pairingResponse = later.sent.first else {
            Issue.record("\(later)")
            return
        }
    }

    @Test func backoffIsPerPeer() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .displayOnly, fixedPasskey: 2))
        _ = try Self.failOnce(manager, now: .zero)
        let other = BluetoothAddress("C0:99:99:99:99:99", kind: .random)!
        manager.connectionOpened(0x41, peer: other, local: Self.gatewayAddress)
        let actions = manager.receive(Self.central().pairingRequest.encoded, on: 0x41, now: .seconds(1))
        guard case .pairingResponse = actions.sent.first else {
            Issue.record("\(actions)")
            return
        }
    }

    // MARK: Timeout

    @Test func smpTimeoutEndsPairingAndSilencesTheLink() throws {
        let manager = Self.manager()
        #expect(manager.nextDeadline == nil)
        _ = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .seconds(5))
        #expect(manager.nextDeadline == .seconds(35))
        #expect(manager.expireTimers(now: .seconds(34)).isEmpty)
        let expired = manager.expireTimers(now: .seconds(35))
        #expect(expired == [.event(.pairingFailed(Self.handle, peer: Self.centralAddress, .timedOut))])
        #expect(manager.nextDeadline == nil)
        #expect(manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .seconds(36)).isEmpty)
        // A new connection may pair again.
        manager.connectionClosed(Self.handle)
        manager.connectionOpened(Self.handle, peer: Self.centralAddress, local: Self.gatewayAddress)
        #expect(!manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .seconds(37)).isEmpty)
    }

    @Test func eachPDURestartsTheTimer() throws {
        let manager = Self.manager()
        var central = Self.central()
        _ = try Self.exchangeKeys(manager, &central, now: .seconds(20))
        #expect(manager.nextDeadline == .seconds(50))
    }

    // MARK: Security Request

    @Test func securityRequestAsksForWhatTheAccessNeeds() {
        let manager = Self.manager()
        #expect(
            manager.requestSecurity(on: Self.handle, authenticated: true, now: .zero).sent
                == [.securityRequest([.bonding, .mitm, .secureConnections])])
        #expect(
            manager.requestSecurity(on: Self.handle, authenticated: false, now: .zero).sent
                == [.securityRequest([.bonding, .secureConnections])])
        _ = manager.receive(Self.central().pairingRequest.encoded, on: Self.handle, now: .zero)
        #expect(manager.requestSecurity(on: Self.handle, authenticated: true, now: .zero).isEmpty)
    }

    // MARK: Reconnection

    @Test func bondedCentralReconnectsThroughAResolvablePrivateAddress() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput))
        var central = Self.central(Self.features(io: .noInputNoOutput))
        let keys = try Self.exchangeKeys(manager, &central)
        try central.accept(confirm: keys.sent[2])
        #expect(try central.verify(random: manager.receive(central.nonce().encoded, on: Self.handle, now: .zero).sent[0], z: 0))
        _ = manager.receive(try central.dhKeyCheck(passkey: nil).encoded, on: Self.handle, now: .zero)
        _ = try Self.finish(manager, central)
        #expect(manager.setClientConfiguration(0x0001, handle: 0x002A, on: Self.handle))
        manager.connectionClosed(Self.handle)

        // A new RPA generated from the central's IRK: prand 0x4A1B2C, hash = ah(IRK, prand).
        let prand: [UInt8] = [0x4A, 0x1B, 0x2C]
        let hash = try SecurityToolbox.ah(irk: central.identityResolvingKey.bytes, prand: prand)
        let rpa = BluetoothAddress(littleEndianBytes: hash.reversed() + prand.reversed(), kind: .random)
        #expect(rpa.isResolvablePrivate)
        manager.connectionOpened(0x41, peer: rpa, local: Self.gatewayAddress)
        #expect(manager.bond(on: 0x41)?.clientConfigurations == [0x002A: 0x0001])
        #expect(manager.linkEncryption(on: 0x41) == nil)
        #expect(manager.longTermKeyRequest(on: 0x41, ediv: 1, rand: 0) == nil)
        let key = try #require(manager.longTermKeyRequest(on: 0x41, ediv: 0, rand: 0))
        #expect(key.key.bytes == central.ltk)
        #expect(manager.encryptionChanged(on: 0x41, enabled: true, now: .zero).isEmpty)
        #expect(
            manager.linkEncryption(on: 0x41)
                == LinkEncryption(
                    keySize: 16, authenticated: false,
                    secureConnections: true, bonded: true))
        #expect(manager.setClientConfiguration(0x0002, handle: 0x002A, on: 0x41))
        #expect(manager.bonds.bonds[0].clientConfigurations == [0x002A: 0x0002])
        // A stranger gets no key, and cannot touch the bond by claiming its identity address.
        manager.connectionOpened(0x43, peer: central.identity, local: Self.gatewayAddress)
        #expect(!manager.setClientConfiguration(0, handle: 0x002A, on: 0x43))
        manager.connectionOpened(0x42, peer: BluetoothAddress("C0:99:99:99:99:99", kind: .random)!, local: Self.gatewayAddress)
        #expect(manager.longTermKeyRequest(on: 0x42, ediv: 0, rand: 0) == nil)
    }

    // MARK: Legacy (allowLegacy)

    @Test func legacyJustWorksWhenAllowed() throws {
        let manager = Self.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput, allowLegacy: true))
        var central = Self.central(Self.features(io: .noInputNoOutput, auth: [.bonding]))
        let response = manager.receive(central.pairingRequest.encoded, on: Self.handle, now: .zero)
        guard case .pairingResponse(let features) = response.sent.first else {
            Issue.record("\(response)")
            return
        }
        #expect(features.responderKeys == [.encryptionKey, .identityKey])
        central.accept(response: features)
        let tk = [UInt8](repeating: 0, count: 16)
        let sconfirm = manager.receive(try central.legacyConfirm(tk: tk).encoded, on: Self.handle, now: .zero)
        guard case .pairingConfirm(let confirm) = sconfirm.sent.first else {
            Issue.record("\(sconfirm)")
            return
        }
        let srandom = manager.receive(SMPPDU.pairingRandom(central.mrand.reversed()).encoded, on: Self.handle, now: .zero)
        guard case .pairingRandom(let srand) = srandom.sent.first else {
            Issue.record("\(srandom)")
            return
        }
        #expect(try central.c1(tk: tk, rand: srand.reversed()) == confirm.reversed())
        let stk = try SecurityToolbox.s1(k: tk, r1: srand.reversed(), r2: central.mrand)
        #expect(manager.longTermKeyRequest(on: Self.handle, ediv: 0, rand: 0)?.key.bytes == stk)
        let distributed = manager.encryptionChanged(on: Self.handle, enabled: true, now: .zero)
        guard case .encryptionInformation(let ltk) = distributed.sent.first,
            case .centralIdentification(let ediv, let rand) = distributed.sent.dropFirst().first
        else {
            Issue.record("\(distributed)")
            return
        }
        var done: [SecurityManager.Action] = []
        for pdu in central.identityKeys { done += manager.receive(pdu.encoded, on: Self.handle, now: .zero) }
        guard case .pairingComplete(_, let outcome) = done.events.first, let bond = outcome.bond else {
            Issue.record("\(done)")
            return
        }
        #expect(bond.longTermKey.key.littleEndianBytes == ltk)
        #expect(bond.longTermKey.ediv == ediv && bond.longTermKey.rand == rand)
        #expect(!bond.longTermKey.secureConnections && !bond.longTermKey.authenticated)
        // Reconnection: only the distributed EDIV/Rand find the key.
        manager.connectionOpened(0x41, peer: central.identity, local: Self.gatewayAddress)
        #expect(manager.longTermKeyRequest(on: 0x41, ediv: 0, rand: 0) == nil)
        #expect(manager.longTermKeyRequest(on: 0x41, ediv: ediv, rand: rand)?.key.littleEndianBytes == ltk)
    }

    @Test func legacyPasskeyWrongConfirmFails() throws {
        let manager = Self.manager(
            try SecurityConfiguration(
                ioCapability: .displayOnly, fixedPasskey: 999_999,
                allowLegacy: true))
        var central = Self.central(Self.features(auth: [.bonding, .mitm]))
        let response = manager.receive(central.pairingRequest.encoded, on: Self.handle, now: .zero)
        #expect(response.events == [.displayPasskey(Self.handle, peer: Self.centralAddress, passkey: 999_999)])
        guard case .pairingResponse(let features) = response.sent.first else {
            Issue.record("\(response)")
            return
        }
        central.accept(response: features)
        // The right TK first: the gateway's confirm checks out.
        let right = TestCentral.r(passkey: 999_999)
        let sconfirm = manager.receive(try central.legacyConfirm(tk: right).encoded, on: Self.handle, now: .zero)
        guard case .pairingConfirm = sconfirm.sent.first else {
            Issue.record("\(sconfirm)")
            return
        }
        // Then a random that does not match the confirm: Confirm Value Failed.
        let bad = manager.receive(SMPPDU.pairingRandom([UInt8](repeating: 7, count: 16)).encoded, on: Self.handle, now: .zero)
        #expect(bad.sent == [.pairingFailed(.confirmValueFailed)])
    }
}
