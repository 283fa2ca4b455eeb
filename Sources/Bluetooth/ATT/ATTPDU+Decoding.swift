import BluetoothCore

/// Why bytes are not a well-formed ATT PDU.
public enum ATTDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A zero-length L2CAP payload: not even an opcode.
    case empty
    /// An opcode this codec does not know.
    case unknownOpcode(UInt8)
    /// A known opcode whose parameters are too short, too long or otherwise malformed.
    case malformed(ATTOpcode, reason: String)

    public var description: String {
        switch self {
        case .empty: "empty ATT PDU"
        case .unknownOpcode(let raw): "unknown ATT opcode 0x\(String(raw, radix: 16))"
        case .malformed(let opcode, let reason): "malformed ATT \(opcode) PDU: \(reason)"
        }
    }
}

extension ATTPDU {
    /// Parses one ATT PDU (the L2CAP payload of the ATT fixed channel, opcode first).
    public init(decoding bytes: [UInt8]) throws(ATTDecodingError) {
        guard let first = bytes.first else { throw .empty }
        guard let opcode = ATTOpcode(rawValue: first) else { throw .unknownOpcode(first) }
        var parser = ATTParser(opcode: opcode, bytes: bytes)
        self = try parser.parse()
    }
}

/// Reads one PDU's parameters, turning every short read or leftover byte into `.malformed`.
private struct ATTParser {
    let opcode: ATTOpcode
    var reader: ByteReader

    init(opcode: ATTOpcode, bytes: [UInt8]) {
        self.opcode = opcode
        reader = ByteReader(bytes, offset: 1)
    }

    mutating func parse() throws(ATTDecodingError) -> ATTPDU {
        switch opcode {
        case .errorResponse:
            let request = try u8()
            let handle = try u16()
            let code = try u8()
            try end()
            return .errorResponse(requestOpcode: request, handle: handle, error: ATTErrorCode(rawValue: code))
        case .exchangeMTURequest:
            let mtu = try u16()
            try end()
            return .exchangeMTURequest(clientRxMTU: mtu)
        case .exchangeMTUResponse:
            let mtu = try u16()
            try end()
            return .exchangeMTUResponse(serverRxMTU: mtu)
        case .findInformationRequest:
            let range = try handleRange()
            try end()
            return .findInformationRequest(range)
        case .findInformationResponse:
            let format = try u8()
            let uuidLength: Int
            switch format {
            case 0x01: uuidLength = 2
            case 0x02: uuidLength = 16
            default: throw fail("format 0x\(String(format, radix: 16)) is neither 0x01 nor 0x02")
            }
            let entries = try list(entryLength: 2 + uuidLength) { parser throws(ATTDecodingError) in
                ATTHandleUUID(handle: try parser.u16(), type: try parser.uuid(length: uuidLength))
            }
            return .findInformationResponse(entries)
        case .findByTypeValueRequest:
            let range = try handleRange()
            let type = try u16()
            return .findByTypeValueRequest(range, type: type, value: reader.readRemaining())
        case .findByTypeValueResponse:
            let ranges = try list(entryLength: 4) { parser throws(ATTDecodingError) in try parser.handleRange() }
            return .findByTypeValueResponse(ranges)
        case .readByTypeRequest, .readByGroupTypeRequest:
            let range = try handleRange()
            let length = reader.remainingCount
            guard length == 2 || length == 16 else { throw fail("attribute type of \(length) bytes is neither 2 nor 16") }
            let type = try uuid(length: length)
            return opcode == .readByTypeRequest
                ? .readByTypeRequest(range, type: type) : .readByGroupTypeRequest(range, type: type)
        case .readByTypeResponse:
            let length = Int(try u8())
            guard length >= 2 else { throw fail("entry length \(length) is below 2") }
            let entries = try list(entryLength: length) { parser throws(ATTDecodingError) in
                ATTHandleValue(handle: try parser.u16(), value: try parser.bytes(length - 2))
            }
            return .readByTypeResponse(entries)
        case .readRequest:
            let handle = try u16()
            try end()
            return .readRequest(handle: handle)
        case .readResponse:
            return .readResponse(reader.readRemaining())
        case .readBlobRequest:
            let handle = try u16()
            let offset = try u16()
            try end()
            return .readBlobRequest(handle: handle, offset: offset)
        case .readBlobResponse:
            return .readBlobResponse(reader.readRemaining())
        case .readMultipleRequest, .readMultipleVariableRequest:
            let handles = try list(entryLength: 2) { parser throws(ATTDecodingError) in try parser.u16() }
            guard handles.count >= 2 else { throw fail("a set of \(handles.count) handles; at least 2 are required") }
            return opcode == .readMultipleRequest
                ? .readMultipleRequest(handles: handles) : .readMultipleVariableRequest(handles: handles)
        case .readMultipleResponse:
            return .readMultipleResponse(reader.readRemaining())
        case .readMultipleVariableResponse:
            var tuples: [ATTLengthValue] = []
            while !reader.isAtEnd {
                let length = try u16()
                // The last value may be truncated to fit the MTU; its length field stays whole.
                let value = try bytes(min(Int(length), reader.remainingCount))
                tuples.append(ATTLengthValue(length: length, value: value))
            }
            return .readMultipleVariableResponse(tuples)
        case .readByGroupTypeResponse:
            let length = Int(try u8())
            guard length >= 4 else { throw fail("entry length \(length) is below 4") }
            let groups = try list(entryLength: length) { parser throws(ATTDecodingError) in
                ATTGroupValue(
                    handle: try parser.u16(), endGroupHandle: try parser.u16(),
                    value: try parser.bytes(length - 4))
            }
            return .readByGroupTypeResponse(groups)
        case .writeRequest:
            let handle = try u16()
            return .writeRequest(handle: handle, value: reader.readRemaining())
        case .writeCommand:
            let handle = try u16()
            return .writeCommand(handle: handle, value: reader.readRemaining())
        case .signedWriteCommand:
            let handle = try u16()
            let valueLength = reader.remainingCount - ATTPDU.signatureLength
            guard valueLength >= 0 else { throw fail("shorter than its 12-byte signature") }
            let value = try bytes(valueLength)
            return .signedWriteCommand(handle: handle, value: value, signature: reader.readRemaining())
        case .prepareWriteRequest, .prepareWriteResponse:
            let handle = try u16()
            let offset = try u16()
            let value = reader.readRemaining()
            return opcode == .prepareWriteRequest
                ? .prepareWriteRequest(handle: handle, offset: offset, value: value)
                : .prepareWriteResponse(handle: handle, offset: offset, value: value)
        case .executeWriteRequest:
            let flags = try u8()
            try end()
            guard flags <= 0x01 else { throw fail("flags 0x\(String(flags, radix: 16)) are neither 0x00 nor 0x01") }
            return .executeWriteRequest(commit: flags == 0x01)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            try end()
            return opcode == .writeResponse
                ? .writeResponse
                : opcode == .executeWriteResponse ? .executeWriteResponse : .handleValueConfirmation
        case .handleValueNotification, .handleValueIndication:
            let handle = try u16()
            let value = reader.readRemaining()
            return opcode == .handleValueNotification
                ? .handleValueNotification(handle: handle, value: value)
                : .handleValueIndication(handle: handle, value: value)
        case .multipleHandleValueNotification:
            var entries: [ATTHandleValue] = []
            while !reader.isAtEnd {
                let handle = try u16()
                let length = try u16()
                entries.append(ATTHandleValue(handle: handle, value: try bytes(Int(length))))
            }
            guard entries.count >= 2 else { throw fail("\(entries.count) tuples; at least 2 are required") }
            return .multipleHandleValueNotification(entries)
        }
    }

    // MARK: Field readers

    private func fail(_ reason: String) -> ATTDecodingError { .malformed(opcode, reason: reason) }

    mutating func u8() throws(ATTDecodingError) -> UInt8 {
        do { return try reader.readUInt8() } catch { throw fail("truncated") }
    }

    mutating func u16() throws(ATTDecodingError) -> UInt16 {
        do { return try reader.readUInt16() } catch { throw fail("truncated") }
    }

    mutating func bytes(_ count: Int) throws(ATTDecodingError) -> [UInt8] {
        do { return try reader.readBytes(count) } catch { throw fail("truncated") }
    }

    mutating func handleRange() throws(ATTDecodingError) -> ATTHandleRange {
        ATTHandleRange(start: try u16(), end: try u16())
    }

    mutating func uuid(length: Int) throws(ATTDecodingError) -> BluetoothUUID {
        guard let uuid = BluetoothUUID(littleEndianBytes: try bytes(length)) else { throw fail("bad UUID") }
        return uuid
    }

    func end() throws(ATTDecodingError) {
        guard reader.isAtEnd else { throw fail("\(reader.remainingCount) unexpected trailing bytes") }
    }

    /// A non-empty list of fixed-length entries filling the rest of the PDU exactly.
    mutating func list<Entry>(
        entryLength: Int, _ entry: (inout ATTParser) throws(ATTDecodingError) -> Entry
    ) throws(ATTDecodingError) -> [Entry] {
        guard reader.remainingCount > 0, reader.remainingCount % entryLength == 0 else {
            throw fail("\(reader.remainingCount) bytes are not a whole list of \(entryLength)-byte entries")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(reader.remainingCount / entryLength)
        while !reader.isAtEnd { entries.append(try entry(&self)) }
        return entries
    }
}
