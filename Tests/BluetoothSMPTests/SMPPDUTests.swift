import BluetoothCore
import Testing

@testable import BluetoothSMP

@Suite struct SMPPDUTests {
    static let sixteen = hex("000102030405060708090a0b0c0d0e0f")

    /// Every PDU against its bytes. The Pairing Request/Response bytes are Appendix D's c1
    /// example (preq 0x07071000000101, pres 0x05000800000302, read least significant octet first).
    static let vectors: [(String, SMPPDU)] = [
        (
            "01 01 00 00 10 07 07",
            .pairingRequest(
                PairingFeatures(
                    ioCapability: .displayYesNo, authentication: [], maximumKeySize: 16,
                    initiatorKeys: [.encryptionKey, .identityKey, .signingKey],
                    responderKeys: [.encryptionKey, .identityKey, .signingKey]))
        ),
        (
            "02 03 00 00 08 00 05",
            .pairingResponse(
                PairingFeatures(
                    ioCapability: .noInputNoOutput, authentication: [], maximumKeySize: 8,
                    initiatorKeys: [], responderKeys: [.encryptionKey, .signingKey]))
        ),
        (
            "01 04 01 2d 10 02 03",
            .pairingRequest(
                PairingFeatures(
                    ioCapability: .keyboardDisplay, oobDataPresent: true,
                    authentication: [.bonding, .mitm, .secureConnections, .ct2], maximumKeySize: 16,
                    initiatorKeys: [.identityKey], responderKeys: [.encryptionKey, .identityKey]))
        ),
        ("03 000102030405060708090a0b0c0d0e0f", .pairingConfirm(sixteen)),
        ("04 000102030405060708090a0b0c0d0e0f", .pairingRandom(sixteen)),
        ("05 04", .pairingFailed(.confirmValueFailed)),
        ("05 0b", .pairingFailed(.dhKeyCheckFailed)),
        ("05 7f", .pairingFailed(PairingFailureReason(rawValue: 0x7F))),
        ("06 000102030405060708090a0b0c0d0e0f", .encryptionInformation(longTermKey: sixteen)),
        ("07 3412 0807060504030201", .centralIdentification(ediv: 0x1234, rand: 0x0102_0304_0506_0708)),
        ("08 000102030405060708090a0b0c0d0e0f", .identityInformation(identityResolvingKey: sixteen)),
        ("09 01 ffeeddccbbca", .identityAddressInformation(BluetoothAddress("CA:BB:CC:DD:EE:FF", kind: .random)!)),
        ("09 00 665544332211", .identityAddressInformation(BluetoothAddress("11:22:33:44:55:66")!)),
        ("0a 000102030405060708090a0b0c0d0e0f", .signingInformation(signatureKey: sixteen)),
        ("0b 0d", .securityRequest([.bonding, .mitm, .secureConnections])),
        (
            "0c " + String(repeating: "11", count: 32) + String(repeating: "22", count: 32),
            .pairingPublicKey(x: [UInt8](repeating: 0x11, count: 32), y: [UInt8](repeating: 0x22, count: 32))
        ),
        ("0d 000102030405060708090a0b0c0d0e0f", .pairingDHKeyCheck(sixteen)),
        ("0e 00", .keypressNotification(.entryStarted)),
        ("0e 04", .keypressNotification(.entryCompleted))
    ]

    @Test(arguments: vectors)
    func decodesAndEncodes(bytes: String, pdu: SMPPDU) throws {
        #expect(try SMPPDU(decoding: hex(bytes)) == pdu)
        #expect(pdu.encoded == hex(bytes))
    }

    static let malformed: [(String, SMPPDU.DecodeError)] = [
        ("", .empty),
        ("00", .reservedCode(0x00)),
        ("0f 00", .reservedCode(0x0F)),
        ("ff", .reservedCode(0xFF)),
        ("01 01 00 00 10 07", .wrongLength(.pairingRequest, expected: 6, actual: 5)),
        ("01 01 00 00 10 07 07 00", .wrongLength(.pairingRequest, expected: 6, actual: 7)),
        ("03 0001", .wrongLength(.pairingConfirm, expected: 16, actual: 2)),
        ("05", .wrongLength(.pairingFailed, expected: 1, actual: 0)),
        ("0c 00", .wrongLength(.pairingPublicKey, expected: 64, actual: 1)),
        ("01 05 00 00 10 07 07", .invalidParameter(.pairingRequest, "IO capability 5")),
        ("01 01 02 00 10 07 07", .invalidParameter(.pairingRequest, "OOB data flag 2")),
        ("01 01 00 00 06 07 07", .invalidParameter(.pairingRequest, "maximum encryption key size 6")),
        ("01 01 00 00 11 07 07", .invalidParameter(.pairingRequest, "maximum encryption key size 17")),
        ("09 02 665544332211", .invalidParameter(.identityAddressInformation, "address type 2")),
        ("0e 05", .invalidParameter(.keypressNotification, "notification type 5"))
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(bytes: String, error: SMPPDU.DecodeError) {
        #expect(throws: error) { try SMPPDU(decoding: hex(bytes)) }
    }

    @Test func malformedPacketsAreAnsweredOrDroppedAsTheSpecSays() {
        #expect(SMPPDU.DecodeError.reservedCode(0x0F).failureReason == nil)
        #expect(SMPPDU.DecodeError.empty.failureReason == nil)
        #expect(SMPPDU.DecodeError.wrongLength(.pairingConfirm, expected: 16, actual: 2).failureReason == .invalidParameters)
        #expect(SMPPDU.DecodeError.invalidParameter(.pairingRequest, "x").failureReason == .invalidParameters)
    }

    @Test func descriptionsNeverShowKeys() {
        let key = hex("a1b2c3d4e5f60718293a4b5c6d7e8f90")
        let pdus: [SMPPDU] = [
            .encryptionInformation(longTermKey: key), .identityInformation(identityResolvingKey: key),
            .signingInformation(signatureKey: key), .pairingDHKeyCheck(key), .pairingRandom(key),
            .centralIdentification(ediv: 0xBEEF, rand: 0x1122_3344_5566_7788)
        ]
        for pdu in pdus {
            let text = "\(pdu)" + String(reflecting: pdu)
            #expect(!text.lowercased().contains("a1b2c3"), "\(text)")
            #expect(!text.contains("48879") && !text.lowercased().contains("beef"), "\(text)")
        }
        #expect("\(PairingFailureReason.dhKeyCheckFailed)" == "DHKey Check Failed (0x0B)")
    }
}

@Suite struct AssociationModelTests {
    @Test(arguments: [
        (IOCapability.keyboardDisplay, IOCapability.displayOnly, true, true, AssociationModel.passkeyDisplay),
        (.keyboardOnly, .displayYesNo, true, true, .passkeyDisplay),
        (.displayYesNo, .displayYesNo, true, true, .numericComparison),
        (.displayYesNo, .displayYesNo, true, false, .justWorks),
        (.keyboardDisplay, .displayYesNo, true, true, .numericComparison),
        (.keyboardDisplay, .displayYesNo, true, false, .passkeyDisplay),
        (.keyboardDisplay, .keyboardDisplay, true, false, .passkeyInput),
        (.displayOnly, .keyboardOnly, true, true, .passkeyInput),
        (.noInputNoOutput, .displayOnly, true, true, .justWorks),
        (.keyboardDisplay, .noInputNoOutput, true, true, .justWorks),
        (.keyboardDisplay, .displayOnly, false, true, .justWorks)
    ])
    func selectsTheModelOfTable2_8(
        initiator: IOCapability, responder: IOCapability, mitm: Bool, sc: Bool,
        expected: AssociationModel
    ) {
        #expect(
            AssociationModel.select(
                initiator: initiator, responder: responder, mitmRequested: mitm,
                secureConnections: sc) == expected)
    }
}

@Suite struct SecurityConfigurationTests {
    @Test func rejectsValuesOutOfRangeWithAClearError() {
        #expect(throws: SecurityConfiguration.Error.passkeyOutOfRange(1_000_000)) {
            try SecurityConfiguration(fixedPasskey: 1_000_000)
        }
        #expect(throws: SecurityConfiguration.Error.keySizeOutOfRange(6)) { try SecurityConfiguration(minimumKeySize: 6) }
        #expect(throws: SecurityConfiguration.Error.backoffOutOfRange) {
            try SecurityConfiguration(backoffBase: .seconds(10), backoffMaximum: .seconds(5))
        }
        #expect("\(SecurityConfiguration.Error.passkeyOutOfRange(1_000_000))" == "fixed passkey 1000000 is not 000000...999999")
        #expect(SecurityConfiguration.standard.ioCapability == .displayOnly && !SecurityConfiguration.standard.allowLegacy)
    }
}
