import BluetoothCore

/// A command on the LE signaling channel (Core Vol 3 Part A 4): code, identifier, data.
public struct SignalingCommand: Equatable, Sendable {
    public enum Code {
        public static let commandReject: UInt8 = 0x01
        public static let disconnectionRequest: UInt8 = 0x06
        public static let connectionParameterUpdateRequest: UInt8 = 0x12
        public static let connectionParameterUpdateResponse: UInt8 = 0x13
        public static let leCreditBasedConnectionRequest: UInt8 = 0x14
        public static let flowControlCredit: UInt8 = 0x16
    }

    public var code: UInt8
    public var identifier: UInt8
    public var data: [UInt8]

    public init(code: UInt8, identifier: UInt8, data: [UInt8]) {
        self.code = code
        self.identifier = identifier
        self.data = data
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 4 + data.count)
        writer.write(code)
        writer.write(identifier)
        writer.write(UInt16(data.count))
        writer.write(contentsOf: data)
        return writer.bytes
    }

    /// nil when the payload is too short for a command header or its length field is wrong.
    public init?(decoding bytes: [UInt8]) {
        guard bytes.count >= 4 else { return nil }
        let length = Int(bytes[2]) | Int(bytes[3]) << 8
        guard bytes.count - 4 == length else { return nil }
        self.init(code: bytes[0], identifier: bytes[1], data: Array(bytes[4...]))
    }

    /// Command Reject with reason "Command not understood" (0x0000).
    public static func commandNotUnderstood(identifier: UInt8) -> SignalingCommand {
        SignalingCommand(code: Code.commandReject, identifier: identifier, data: [0x00, 0x00])
    }

    /// Connection Parameter Update Request; intervals in 1.25 ms, timeout in 10 ms units.
    public static func connectionParameterUpdateRequest(
        identifier: UInt8, parameters: ConnectionParameters
    ) -> SignalingCommand {
        var writer = ByteWriter()
        writer.write(parameters.intervalMin)
        writer.write(parameters.intervalMax)
        writer.write(parameters.latency)
        writer.write(parameters.supervisionTimeout)
        return SignalingCommand(
            code: Code.connectionParameterUpdateRequest, identifier: identifier,
            data: writer.bytes)
    }
}

/// Connection parameters a peripheral may ask for (Core Vol 3 Part A 4.20).
public struct ConnectionParameters: Equatable, Sendable {
    /// Units of 1.25 ms.
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// Connection events the peripheral may skip.
    public var latency: UInt16
    /// Units of 10 ms.
    public var supervisionTimeout: UInt16

    public init(intervalMin: UInt16, intervalMax: UInt16, latency: UInt16, supervisionTimeout: UInt16) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }
}

/// The peripheral's end of one connection's LE signaling channel: answers what the central
/// sends and words the peripheral's own requests. Pure: bytes in, bytes and outcomes out.
public struct LESignalingChannel: Sendable {
    public enum Outcome: Equatable, Sendable {
        /// Bytes to send back on CID 0x0005.
        case reply([UInt8])
        /// The central answered a Connection Parameter Update Request.
        case parameterUpdateAnswered(accepted: Bool)
        /// Bytes that are not a signaling command; dropped.
        case malformed(byteCount: Int)
        /// A Command Reject from the central for one of our requests.
        case rejected(identifier: UInt8)
        case ignored
    }

    private var nextIdentifier: UInt8 = 1
    private var pendingUpdateIdentifier: UInt8?

    public init() {}

    public mutating func receive(_ payload: [UInt8]) -> Outcome {
        guard let command = SignalingCommand(decoding: payload) else {
            return .malformed(byteCount: payload.count)
        }
        switch command.code {
        case SignalingCommand.Code.connectionParameterUpdateResponse:
            guard command.identifier == pendingUpdateIdentifier, command.data.count == 2 else {
                return .ignored
            }
            pendingUpdateIdentifier = nil
            return .parameterUpdateAnswered(accepted: command.data[0] == 0 && command.data[1] == 0)
        case SignalingCommand.Code.commandReject:
            if command.identifier == pendingUpdateIdentifier { pendingUpdateIdentifier = nil }
            return .rejected(identifier: command.identifier)
        default:
            // Everything else (a parameter update request sent to the wrong role, credit-based
            // channels, unknown codes) is not understood. Identifier 0 is invalid on this
            // channel: such a command is dropped without reply (Vol 3 Part A 4).
            guard command.identifier != 0 else { return .ignored }
            return .reply(SignalingCommand.commandNotUnderstood(identifier: command.identifier).encoded)
        }
    }

    /// The bytes of a new Connection Parameter Update Request.
    public mutating func requestParameterUpdate(_ parameters: ConnectionParameters) -> [UInt8] {
        let identifier = nextIdentifier
        nextIdentifier = nextIdentifier == 0xFF ? 1 : nextIdentifier + 1
        pendingUpdateIdentifier = identifier
        return SignalingCommand.connectionParameterUpdateRequest(
            identifier: identifier,
            parameters: parameters
        ).encoded
    }
}
