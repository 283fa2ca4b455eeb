import BluetoothCore

/// An inclusive handle range as ATT requests carry it. Not a Swift range: a request may name a
/// start above its end, which the server must answer with Invalid Handle rather than trap on.
public struct ATTHandleRange: Hashable, Sendable {
    public var start: UInt16
    public var end: UInt16
    public init(start: UInt16, end: UInt16) {
        self.start = start
        self.end = end
    }
}

/// One handle with its value (Read By Type entries, Multiple Handle Value Notification tuples).
public struct ATTHandleValue: Hashable, Sendable {
    public var handle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// One group (service) found by Read By Group Type.
public struct ATTGroupValue: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}

/// One handle and attribute type found by Find Information.
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var type: BluetoothUUID
    public init(handle: UInt16, type: BluetoothUUID) {
        self.handle = handle
        self.type = type
    }
}

/// One Read Multiple Variable Length tuple: the attribute's full length and the (possibly
/// truncated) part of its value that fitted in the response.
public struct ATTLengthValue: Hashable, Sendable {
    public var length: UInt16
    public var value: [UInt8]
    public init(length: UInt16, value: [UInt8]) {
        self.length = length
        self.value = value
    }
}

/// Every ATT PDU an LE peripheral's server receives or sends (Core 5.4 Vol 3 Part F 3.4).
///
/// `encoded` and `init(decoding:)` are pure and exact inverses for every well-formed PDU; the
/// decoder throws `ATTDecodingError` for anything malformed and never traps. Lists whose entries
/// share one length on air (Find Information, Read By Type, Read By Group Type) take that length
/// from their first entry: the server builds them with equal lengths.
public enum ATTPDU: Hashable, Sendable {
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: ATTErrorCode)
    case exchangeMTURequest(clientRxMTU: UInt16)
    case exchangeMTUResponse(serverRxMTU: UInt16)
    case findInformationRequest(ATTHandleRange)
    case findInformationResponse([ATTHandleUUID])
    case findByTypeValueRequest(ATTHandleRange, type: UInt16, value: [UInt8])
    /// Each entry is a found attribute handle and its group end handle.
    case findByTypeValueResponse([ATTHandleRange])
    case readByTypeRequest(ATTHandleRange, type: BluetoothUUID)
    case readByTypeResponse([ATTHandleValue])
    case readRequest(handle: UInt16)
    case readResponse([UInt8])
    case readBlobRequest(handle: UInt16, offset: UInt16)
    case readBlobResponse([UInt8])
    case readMultipleRequest(handles: [UInt16])
    case readMultipleResponse([UInt8])
    case readMultipleVariableRequest(handles: [UInt16])
    case readMultipleVariableResponse([ATTLengthValue])
    case readByGroupTypeRequest(ATTHandleRange, type: BluetoothUUID)
    case readByGroupTypeResponse([ATTGroupValue])
    case writeRequest(handle: UInt16, value: [UInt8])
    case writeResponse
    case writeCommand(handle: UInt16, value: [UInt8])
    case signedWriteCommand(handle: UInt16, value: [UInt8], signature: [UInt8])
    case prepareWriteRequest(handle: UInt16, offset: UInt16, value: [UInt8])
    case prepareWriteResponse(handle: UInt16, offset: UInt16, value: [UInt8])
    /// `commit` true writes all prepared values, false cancels them.
    case executeWriteRequest(commit: Bool)
    case executeWriteResponse
    case handleValueNotification(handle: UInt16, value: [UInt8])
    case handleValueIndication(handle: UInt16, value: [UInt8])
    case handleValueConfirmation
    case multipleHandleValueNotification([ATTHandleValue])

    /// The ATT_MTU of an LE link before any exchange (Vol 3 Part F 3.2.8).
    public static let defaultMTU: UInt16 = 23
    /// The largest ATT_MTU this implementation negotiates (the maximum attribute value, 512,
    /// plus the five bytes of a Prepare Write header).
    public static let maximumMTU: UInt16 = 517
    /// Signed Write Command's Authentication Signature length.
    public static let signatureLength = 12

    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: .errorResponse
        case .exchangeMTURequest: .exchangeMTURequest
        case .exchangeMTUResponse: .exchangeMTUResponse
        case .findInformationRequest: .findInformationRequest
        case .findInformationResponse: .findInformationResponse
        case .findByTypeValueRequest: .findByTypeValueRequest
        case .findByTypeValueResponse: .findByTypeValueResponse
        case .readByTypeRequest: .readByTypeRequest
        case .readByTypeResponse: .readByTypeResponse
        case .readRequest: .readRequest
        case .readResponse: .readResponse
        case .readBlobRequest: .readBlobRequest
        case .readBlobResponse: .readBlobResponse
        case .readMultipleRequest: .readMultipleRequest
        case .readMultipleResponse: .readMultipleResponse
        case .readMultipleVariableRequest: .readMultipleVariableRequest
        case .readMultipleVariableResponse: .readMultipleVariableResponse
        case .readByGroupTypeRequest: .readByGroupTypeRequest
        case .readByGroupTypeResponse: .readByGroupTypeResponse
        case .writeRequest: .writeRequest
        case .writeResponse: .writeResponse
        case .writeCommand: .writeCommand
        case .signedWriteCommand: .signedWriteCommand
        case .prepareWriteRequest: .prepareWriteRequest
        case .prepareWriteResponse: .prepareWriteResponse
        case .executeWriteRequest: .executeWriteRequest
        case .executeWriteResponse: .executeWriteResponse
        case .handleValueNotification: .handleValueNotification
        case .handleValueIndication: .handleValueIndication
        case .handleValueConfirmation: .handleValueConfirmation
        case .multipleHandleValueNotification: .multipleHandleValueNotification
        }
    }

    /// The length of the attribute value a PDU carries after its fixed fields: room `encoded`
    /// makes at once, since growing its buffer reallocates it (for a notification, one
    /// allocation more for every value sent).
    private var valueLength: Int {
        switch self {
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value),
            .writeRequest(_, let value),
            .writeCommand(_, let value), .handleValueNotification(_, let value), .handleValueIndication(_, let value):
            value.count
        default:
            0
        }
    }

    /// The PDU's bytes on air, opcode first.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 8 + valueLength)
        writer.write(opcode.rawValue)
        switch self {
        case .errorResponse(let requestOpcode, let handle, let error):
            writer.write(requestOpcode)
            writer.write(handle)
            writer.write(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            writer.write(mtu)
        case .findInformationRequest(let range):
            writer.write(range)
        case .findInformationResponse(let entries):
            let is16Bit = entries.first?.type.uint16Value != nil
            writer.write(UInt8(is16Bit ? 0x01 : 0x02))
            for entry in entries {
                writer.write(entry.handle)
                writer.write(contentsOf: is16Bit ? entry.type.attBytes : entry.type.uint128Bytes)
            }
        case .findByTypeValueRequest(let range, let type, let value):
            writer.write(range)
            writer.write(type)
            writer.write(contentsOf: value)
        case .findByTypeValueResponse(let ranges):
            for range in ranges { writer.write(range) }
        case .readByTypeRequest(let range, let type), .readByGroupTypeRequest(let range, let type):
            writer.write(range)
            writer.write(contentsOf: type.attBytes)
        case .readByTypeResponse(let entries):
            writer.write(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries {
                writer.write(entry.handle)
                writer.write(contentsOf: entry.value)
            }
        case .readRequest(let handle):
            writer.write(handle)
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            writer.write(contentsOf: value)
        case .readBlobRequest(let handle, let offset):
            writer.write(handle)
            writer.write(offset)
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            for handle in handles { writer.write(handle) }
        case .readMultipleVariableResponse(let tuples):
            for tuple in tuples {
                writer.write(tuple.length)
                writer.write(contentsOf: tuple.value)
            }
        case .readByGroupTypeResponse(let groups):
            writer.write(UInt8(truncatingIfNeeded: 4 + (groups.first?.value.count ?? 0)))
            for group in groups {
                writer.write(group.handle)
                writer.write(group.endGroupHandle)
                writer.write(contentsOf: group.value)
            }
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
            .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            writer.write(handle)
            writer.write(contentsOf: value)
        case .signedWriteCommand(let handle, let value, let signature):
            writer.write(handle)
            writer.write(contentsOf: value)
            writer.write(contentsOf: signature)
        case .prepareWriteRequest(let handle, let offset, let value),
            .prepareWriteResponse(let handle, let offset, let value):
            writer.write(handle)
            writer.write(offset)
            writer.write(contentsOf: value)
        case .executeWriteRequest(let commit):
            writer.write(UInt8(commit ? 0x01 : 0x00))
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case .multipleHandleValueNotification(let entries):
            for entry in entries {
                writer.write(entry.handle)
                writer.write(UInt16(truncatingIfNeeded: entry.value.count))
                writer.write(contentsOf: entry.value)
            }
        }
        return writer.bytes
    }
}

extension ByteWriter {
    fileprivate mutating func write(_ range: ATTHandleRange) {
        write(range.start)
        write(range.end)
    }
}
