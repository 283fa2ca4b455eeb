import BluetoothCore
import Testing

@testable import BluetoothATT

private let uuid128 = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
private let uuid128LE = "9ecadc240ee5a9e093f3a3b50100406e"

/// Byte layouts of Core 5.4 Vol 3 Part F 3.4: every PDU encodes to exactly these bytes and
/// decodes back to itself.
@Suite struct ATTPDUTests {
    static let vectors: [(String, ATTPDU)] = [
        ("01 0a 0300 02", .errorResponse(requestOpcode: 0x0A, handle: 3, error: .readNotPermitted)),
        ("02 f700", .exchangeMTURequest(clientRxMTU: 247)),
        ("03 0502", .exchangeMTUResponse(serverRxMTU: 517)),
        ("04 0100 ffff", .findInformationRequest(ATTHandleRange(start: 1, end: 0xFFFF))),
        (
            "05 01 0100 0028 0200 0328",
            .findInformationResponse([
                ATTHandleUUID(handle: 1, type: BluetoothUUID(0x2800)), ATTHandleUUID(handle: 2, type: BluetoothUUID(0x2803))
            ])
        ),
        ("05 02 0900 " + uuid128LE, .findInformationResponse([ATTHandleUUID(handle: 9, type: uuid128)])),
        ("06 0100 ffff 0028 0d18", .findByTypeValueRequest(ATTHandleRange(start: 1, end: 0xFFFF), type: 0x2800, value: [0x0D, 0x18])),
        ("07 0100 0700 1000 1200", .findByTypeValueResponse([ATTHandleRange(start: 1, end: 7), ATTHandleRange(start: 16, end: 18)])),
        ("08 0100 ffff 0328", .readByTypeRequest(ATTHandleRange(start: 1, end: 0xFFFF), type: BluetoothUUID(0x2803))),
        ("08 0100 ffff " + uuid128LE, .readByTypeRequest(ATTHandleRange(start: 1, end: 0xFFFF), type: uuid128)),
        (
            "09 04 0300 aabb 0500 ccdd",
            .readByTypeResponse([
                ATTHandleValue(handle: 3, value: [0xAA, 0xBB]),
                ATTHandleValue(handle: 5, value: [0xCC, 0xDD])
            ])
        ),
        ("0a 0300", .readRequest(handle: 3)),
        ("0b 0102", .readResponse([1, 2])),
        ("0b", .readResponse([])),
        ("0c 0300 1600", .readBlobRequest(handle: 3, offset: 22)),
        ("0d 0102", .readBlobResponse([1, 2])),
        ("0e 0300 0500", .readMultipleRequest(handles: [3, 5])),
        ("0f 010203", .readMultipleResponse([1, 2, 3])),
        ("10 0100 ffff 0028", .readByGroupTypeRequest(ATTHandleRange(start: 1, end: 0xFFFF), type: BluetoothUUID(0x2800))),
        (
            "11 06 0100 0700 0018 0800 0f00 0118",
            .readByGroupTypeResponse([
                ATTGroupValue(handle: 1, endGroupHandle: 7, value: [0x00, 0x18]),
                ATTGroupValue(handle: 8, endGroupHandle: 15, value: [0x01, 0x18])
            ])
        ),
        ("12 0300 0100", .writeRequest(handle: 3, value: [1, 0])),
        ("13", .writeResponse),
        ("16 0300 0200 aa", .prepareWriteRequest(handle: 3, offset: 2, value: [0xAA])),
        ("17 0300 0200 aa", .prepareWriteResponse(handle: 3, offset: 2, value: [0xAA])),
        ("18 01", .executeWriteRequest(commit: true)),
        ("18 00", .executeWriteRequest(commit: false)),
        ("19", .executeWriteResponse),
        ("1b 1600 4142", .handleValueNotification(handle: 0x16, value: [0x41, 0x42])),
        ("1d 0a00 1000 ffff", .handleValueIndication(handle: 0x0A, value: [0x10, 0x00, 0xFF, 0xFF])),
        ("1e", .handleValueConfirmation),
        ("20 0300 0500", .readMultipleVariableRequest(handles: [3, 5])),
        (
            "21 0200 0102 0300 aabbcc",
            .readMultipleVariableResponse([
                ATTLengthValue(length: 2, value: [1, 2]),
                ATTLengthValue(length: 3, value: [0xAA, 0xBB, 0xCC])
            ])
        ),
        (
            "23 1600 0100 aa 1900 0000",
            .multipleHandleValueNotification([
                ATTHandleValue(handle: 0x16, value: [0xAA]), ATTHandleValue(handle: 0x19, value: [])
            ])
        ),
        ("52 0300 01", .writeCommand(handle: 3, value: [1])),
        ("d2 0300 01 000102030405060708090a0b", .signedWriteCommand(handle: 3, value: [1], signature: Array(0..<12)))
    ]

    @Test(arguments: vectors)
    func encodesAndDecodesExactly(hex: String, pdu: ATTPDU) throws {
        let bytes = try #require([UInt8](hexString: hex))
        #expect(pdu.encoded == bytes)
        #expect(try ATTPDU(decoding: bytes) == pdu)
        #expect(pdu.opcode.rawValue == bytes[0])
    }

    /// An update kept apart from its encoding is the notification or indication PDU it names.
    @Test func updatesAreTheirPDUs() throws {
        let notification = ATTUpdate(.notification, handle: 0x16, value: [0x41, 0x42])
        #expect(notification.encoded == [0x1B, 0x16, 0x00, 0x41, 0x42])
        #expect(try ATTPDU(decoding: notification.encoded) == notification.pdu)
        let indication = ATTUpdate(.indication, handle: 0x16, value: [0x41, 0x42])
        #expect(indication.encoded == [0x1D, 0x16, 0x00, 0x41, 0x42])
        #expect(indication.opcode == .handleValueIndication)
    }

    @Test func everyOpcodeHasAVector() {
        let covered = Set(Self.vectors.map { $0.1.opcode })
        #expect(covered == Set(ATTOpcode.allCases))
    }

    @Test(arguments: [
        ("02 00", ATTOpcode.exchangeMTURequest), ("02 f70000", .exchangeMTURequest),
        ("04 0100", .findInformationRequest), ("05 03 0100 0028", .findInformationResponse),
        ("05 01 0100 00", .findInformationResponse), ("06 0100 ff", .findByTypeValueRequest),
        ("08 0100 ffff 00", .readByTypeRequest), ("08 0100 ffff 00000000", .readByTypeRequest),
        ("09 01 0300", .readByTypeResponse), ("09 04 0300 aa", .readByTypeResponse),
        ("0a 03", .readRequest), ("0a 030000", .readRequest), ("0c 0300 00", .readBlobRequest),
        ("0e 0300", .readMultipleRequest), ("0e 0300 05", .readMultipleRequest),
        ("20 0300", .readMultipleVariableRequest), ("10 0100 ffff 002800", .readByGroupTypeRequest),
        ("11 03 0100 0700", .readByGroupTypeResponse), ("12 03", .writeRequest),
        ("16 0300 00", .prepareWriteRequest), ("18 02", .executeWriteRequest), ("18", .executeWriteRequest),
        ("13 00", .writeResponse), ("1e 00", .handleValueConfirmation), ("1b 16", .handleValueNotification),
        ("23 1600 0500 aa", .multipleHandleValueNotification), ("23 1600 0100 aa", .multipleHandleValueNotification),
        ("d2 0300 0102", .signedWriteCommand), ("01 0a 0300", .errorResponse)
    ])
    func rejectsMalformed(hex: String, opcode: ATTOpcode) throws {
        let bytes = try #require([UInt8](hexString: hex))
        #expect {
            _ = try ATTPDU(decoding: bytes)
        } throws: { error in
            guard case .malformed(let failed, _) = error as? ATTDecodingError else { return false }
            return failed == opcode
        }
    }

    @Test func rejectsEmptyAndUnknown() {
        #expect(throws: ATTDecodingError.empty) { try ATTPDU(decoding: []) }
        #expect(throws: ATTDecodingError.unknownOpcode(0x3F)) { try ATTPDU(decoding: [0x3F]) }
    }

    @Test func requestsAreTheOpcodesAServerAnswers() {
        let requests = ATTOpcode.allCases.filter(\.isRequest).map(\.rawValue).sorted()
        #expect(requests == [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20])
        #expect(ATTOpcode.isRequest(0x3F), "an unknown opcode without the Command flag is answered")
        #expect(!ATTOpcode.isRequest(0x7F), "an unknown command is not")
    }

    @Test func errorCodesDescribeThemselves() {
        #expect(ATTErrorCode.insufficientEncryption.description == "Insufficient Encryption (0xF)")
        #expect(ATTErrorCode.application(0x80).description == "Application Error (0x80)")
    }
}
