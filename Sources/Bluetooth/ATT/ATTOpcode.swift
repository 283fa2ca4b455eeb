/// ATT PDU opcodes (Core 5.4 Vol 3 Part F 3.4.8, Table 3.37).
///
/// Bit 6 is the Command flag (no response follows), bit 7 the Authentication Signature flag.
public enum ATTOpcode: UInt8, Sendable, CaseIterable {
    case errorResponse = 0x01
    case exchangeMTURequest = 0x02
    case exchangeMTUResponse = 0x03
    case findInformationRequest = 0x04
    case findInformationResponse = 0x05
    case findByTypeValueRequest = 0x06
    case findByTypeValueResponse = 0x07
    case readByTypeRequest = 0x08
    case readByTypeResponse = 0x09
    case readRequest = 0x0A
    case readResponse = 0x0B
    case readBlobRequest = 0x0C
    case readBlobResponse = 0x0D
    case readMultipleRequest = 0x0E
    case readMultipleResponse = 0x0F
    case readByGroupTypeRequest = 0x10
    case readByGroupTypeResponse = 0x11
    case writeRequest = 0x12
    case writeResponse = 0x13
    case prepareWriteRequest = 0x16
    case prepareWriteResponse = 0x17
    case executeWriteRequest = 0x18
    case executeWriteResponse = 0x19
    case handleValueNotification = 0x1B
    case handleValueIndication = 0x1D
    case handleValueConfirmation = 0x1E
    case readMultipleVariableRequest = 0x20
    case readMultipleVariableResponse = 0x21
    case multipleHandleValueNotification = 0x23
    case writeCommand = 0x52
    case signedWriteCommand = 0xD2

    /// Requests a client sends and a server must answer with exactly one response or error.
    public var isRequest: Bool { Self.isRequest(rawValue) }

    /// Whether a raw opcode, known or not, expects an answer from the server.
    ///
    /// The Command flag marks PDUs never answered. Among the rest, the server answers the requests
    /// it knows, and every opcode it does not know with Request Not Supported (Vol 3 Part F 3.4.1.1);
    /// responses, notifications, indications and confirmations are never answered.
    public static func isRequest(_ raw: UInt8) -> Bool {
        if raw & 0x40 != 0 { return false }
        guard let known = ATTOpcode(rawValue: raw) else { return true }
        switch known {
        case .exchangeMTURequest, .findInformationRequest, .findByTypeValueRequest,
            .readByTypeRequest, .readRequest, .readBlobRequest, .readMultipleRequest,
            .readByGroupTypeRequest, .writeRequest, .prepareWriteRequest, .executeWriteRequest,
            .readMultipleVariableRequest:
            return true
        default:
            return false
        }
    }
}
