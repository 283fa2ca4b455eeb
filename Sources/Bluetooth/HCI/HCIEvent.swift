import BluetoothCore

/// An HCI event packet (Core Vol 4 Part E 5.4.4, 7.7), decoded for the events the host acts on.
/// Every other event stays `.unknown` with its code and parameters, so nothing is lost.
public enum HCIEvent: Equatable, Sendable {
    case disconnectionComplete(status: HCIStatus, handle: UInt16, reason: HCIStatus)
    case commandComplete(numCommandPackets: UInt8, opcode: HCIOpcode, returnParameters: [UInt8])
    case commandStatus(status: HCIStatus, numCommandPackets: UInt8, opcode: HCIOpcode)
    case hardwareError(code: UInt8)
    case numberOfCompletedPackets(CompletedPacketsList)
    /// Encryption Change (Vol 4 Part E 7.7.8): the link's encryption went on or off.
    case encryptionChange(status: HCIStatus, handle: UInt16, enabled: Bool)
    /// Encryption Key Refresh Complete (Vol 4 Part E 7.7.39): the link was re-encrypted, with
    /// the key of the last LTK reply.
    case encryptionKeyRefreshComplete(status: HCIStatus, handle: UInt16)
    case le(LEMetaEvent)
    case unknown(code: UInt8, parameters: [UInt8])

    public struct CompletedPackets: Equatable, Sendable {
        public var handle: UInt16
        public var count: UInt16
        public init(handle: UInt16, count: UInt16) {
            self.handle = handle
            self.count = count
        }
    }

    public enum Code {
        public static let disconnectionComplete: UInt8 = 0x05
        public static let encryptionChange: UInt8 = 0x08
        public static let commandComplete: UInt8 = 0x0E
        public static let commandStatus: UInt8 = 0x0F
        public static let hardwareError: UInt8 = 0x10
        public static let numberOfCompletedPackets: UInt8 = 0x13
        public static let encryptionKeyRefreshComplete: UInt8 = 0x30
        public static let leMeta: UInt8 = 0x3E
    }

    /// Decodes an event in place from the bytes after its H4 indicator (usually a slice of the
    /// buffer it was read into); the events that come back for every packet sent allocate nothing.
    public init(decoding bytes: borrowing ArraySlice<UInt8>) throws(HCIDecodingError) {
        guard bytes.count >= 2 else { throw .truncated(what: "HCI event header") }
        let code = bytes[bytes.startIndex]
        let length = Int(bytes[bytes.startIndex + 1])
        guard bytes.count - 2 == length else {
            throw .lengthMismatch(
                what: "HCI event 0x\([code].hexString)", declared: length,
                actual: bytes.count - 2)
        }
        // Comes back for every packet sent: read from the slice itself, not through a reader,
        // which would take a reference to the buffer and give it back for every such event.
        if code == Code.numberOfCompletedPackets {
            self = .numberOfCompletedPackets(try CompletedPacketsList(event: bytes))
            return
        }
        var reader = ByteReader(copy bytes, offset: 2)
        do {
            switch code {
            case Code.disconnectionComplete:
                self = .disconnectionComplete(
                    status: HCIStatus(rawValue: try reader.readUInt8()),
                    handle: try reader.readUInt16() & 0x0FFF,
                    reason: HCIStatus(rawValue: try reader.readUInt8()))
            case Code.commandComplete:
                self = .commandComplete(
                    numCommandPackets: try reader.readUInt8(),
                    opcode: HCIOpcode(rawValue: try reader.readUInt16()),
                    returnParameters: reader.readRemaining())
            case Code.commandStatus:
                self = .commandStatus(
                    status: HCIStatus(rawValue: try reader.readUInt8()),
                    numCommandPackets: try reader.readUInt8(),
                    opcode: HCIOpcode(rawValue: try reader.readUInt16()))
            case Code.hardwareError:
                self = .hardwareError(code: try reader.readUInt8())
            case Code.encryptionChange:
                self = .encryptionChange(
                    status: HCIStatus(rawValue: try reader.readUInt8()),
                    handle: try reader.readUInt16() & 0x0FFF,
                    enabled: try reader.readUInt8() != 0)
            case Code.encryptionKeyRefreshComplete:
                self = .encryptionKeyRefreshComplete(
                    status: HCIStatus(rawValue: try reader.readUInt8()),
                    handle: try reader.readUInt16() & 0x0FFF)
            case Code.leMeta:
                self = .le(try LEMetaEvent(decoding: &reader))
            default:
                self = .unknown(code: code, parameters: reader.readRemaining())
            }
        } catch let error as HCIDecodingError {
            throw error
        } catch {
            throw .truncated(what: "HCI event 0x\([code].hexString) parameters")
        }
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter()
        let code: UInt8
        switch self {
        case .disconnectionComplete(let status, let handle, let reason):
            code = Code.disconnectionComplete
            writer.write(status.rawValue)
            writer.write(handle)
            writer.write(reason.rawValue)
        case .commandComplete(let packets, let opcode, let returnParameters):
            code = Code.commandComplete
            writer.write(packets)
            writer.write(opcode.rawValue)
            writer.write(contentsOf: returnParameters)
        case .commandStatus(let status, let packets, let opcode):
            code = Code.commandStatus
            writer.write(status.rawValue)
            writer.write(packets)
            writer.write(opcode.rawValue)
        case .hardwareError(let hardwareCode):
            code = Code.hardwareError
            writer.write(hardwareCode)
        case .numberOfCompletedPackets(let entries):
            code = Code.numberOfCompletedPackets
            writer.write(UInt8(entries.count))
            for entry in entries { writer.write(entry.handle) }
            for entry in entries { writer.write(entry.count) }
        case .encryptionChange(let status, let handle, let enabled):
            code = Code.encryptionChange
            writer.write(status.rawValue)
            writer.write(handle)
            writer.write(UInt8(enabled ? 1 : 0))
        case .encryptionKeyRefreshComplete(let status, let handle):
            code = Code.encryptionKeyRefreshComplete
            writer.write(status.rawValue)
            writer.write(handle)
        case .le(let meta):
            code = Code.leMeta
            writer.write(contentsOf: meta.encoded)
        case .unknown(let unknownCode, let parameters):
            code = unknownCode
            writer.write(contentsOf: parameters)
        }
        return [code, UInt8(writer.bytes.count)] + writer.bytes
    }
}

/// The LE Meta event's subevents the peripheral role uses (Core Vol 4 Part E 7.7.65).
public enum LEMetaEvent: Equatable, Sendable {
    case connectionComplete(LEConnectionComplete)
    case connectionUpdateComplete(
        status: HCIStatus, handle: UInt16, interval: UInt16,
        latency: UInt16, supervisionTimeout: UInt16)
    case dataLengthChange(
        handle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16,
        maxRxOctets: UInt16, maxRxTime: UInt16)
    case phyUpdateComplete(status: HCIStatus, handle: UInt16, txPHY: UInt8, rxPHY: UInt8)
    /// LE Long Term Key Request (Vol 4 Part E 7.7.65.5): the central starts encryption; the host
    /// answers with the key EDIV and Rand name, or the Negative Reply.
    case longTermKeyRequest(handle: UInt16, rand: UInt64, ediv: UInt16)
    case advertisingSetTerminated(
        status: HCIStatus, advertisingHandle: UInt8,
        connectionHandle: UInt16, completedEvents: UInt8)
    case unknown(subevent: UInt8, parameters: [UInt8])

    public enum Subevent {
        public static let connectionComplete: UInt8 = 0x01
        public static let connectionUpdateComplete: UInt8 = 0x03
        public static let longTermKeyRequest: UInt8 = 0x05
        public static let dataLengthChange: UInt8 = 0x07
        public static let enhancedConnectionComplete: UInt8 = 0x0A
        public static let phyUpdateComplete: UInt8 = 0x0C
        public static let advertisingSetTerminated: UInt8 = 0x12
        public static let enhancedConnectionCompleteV2: UInt8 = 0x29
    }

    init(decoding reader: inout ByteReader) throws {
        let subevent = try reader.readUInt8()
        switch subevent {
        case Subevent.connectionComplete, Subevent.enhancedConnectionComplete,
            Subevent.enhancedConnectionCompleteV2:
            self = .connectionComplete(try LEConnectionComplete(subevent: subevent, reader: &reader))
        case Subevent.connectionUpdateComplete:
            self = .connectionUpdateComplete(
                status: HCIStatus(rawValue: try reader.readUInt8()),
                handle: try reader.readUInt16() & 0x0FFF, interval: try reader.readUInt16(),
                latency: try reader.readUInt16(), supervisionTimeout: try reader.readUInt16())
        case Subevent.dataLengthChange:
            self = .dataLengthChange(
                handle: try reader.readUInt16() & 0x0FFF, maxTxOctets: try reader.readUInt16(),
                maxTxTime: try reader.readUInt16(), maxRxOctets: try reader.readUInt16(),
                maxRxTime: try reader.readUInt16())
        case Subevent.phyUpdateComplete:
            self = .phyUpdateComplete(
                status: HCIStatus(rawValue: try reader.readUInt8()),
                handle: try reader.readUInt16() & 0x0FFF, txPHY: try reader.readUInt8(),
                rxPHY: try reader.readUInt8())
        case Subevent.longTermKeyRequest:
            let handle = try reader.readUInt16() & 0x0FFF
            let rand = try reader.readUInt64()
            self = .longTermKeyRequest(handle: handle, rand: rand, ediv: try reader.readUInt16())
        case Subevent.advertisingSetTerminated:
            self = .advertisingSetTerminated(
                status: HCIStatus(rawValue: try reader.readUInt8()),
                advertisingHandle: try reader.readUInt8(),
                connectionHandle: try reader.readUInt16() & 0x0FFF,
                completedEvents: try reader.readUInt8())
        default:
            self = .unknown(subevent: subevent, parameters: reader.readRemaining())
        }
    }

    var encoded: [UInt8] {
        var writer = ByteWriter()
        switch self {
        case .connectionComplete(let event):
            writer.write(contentsOf: event.encoded)
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            writer.write(Subevent.connectionUpdateComplete)
            writer.write(status.rawValue)
            writer.write(handle)
            writer.write(interval)
            writer.write(latency)
            writer.write(timeout)
        case .dataLengthChange(let handle, let txOctets, let txTime, let rxOctets, let rxTime):
            writer.write(Subevent.dataLengthChange)
            for value in [handle, txOctets, txTime, rxOctets, rxTime] { writer.write(value) }
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            writer.write(Subevent.phyUpdateComplete)
            writer.write(status.rawValue)
            writer.write(handle)
            writer.write(tx)
            writer.write(rx)
        case .longTermKeyRequest(let handle, let rand, let ediv):
            writer.write(Subevent.longTermKeyRequest)
            writer.write(handle)
            writer.write(rand)
            writer.write(ediv)
        case .advertisingSetTerminated(
            let status, let advertisingHandle, let connectionHandle,
            let completed):
            writer.write(Subevent.advertisingSetTerminated)
            writer.write(status.rawValue)
            writer.write(advertisingHandle)
            writer.write(connectionHandle)
            writer.write(completed)
        case .unknown(let subevent, let parameters):
            writer.write(subevent)
            writer.write(contentsOf: parameters)
        }
        return writer.bytes
    }
}

/// LE Connection Complete and its enhanced forms (Vol 4 Part E 7.7.65.1, .10, .10 v2), reduced
/// to what a peripheral needs; the subevent is kept so the event re-encodes byte for byte.
public struct LEConnectionComplete: Equatable, Sendable {
    public enum Role: UInt8, Sendable {
        case central = 0x00
        case peripheral = 0x01
    }

    public var subevent: UInt8
    public var status: HCIStatus
    public var handle: UInt16
    public var role: Role
    public var peerAddress: BluetoothAddress
    /// Peer address type as the controller reports it (0-3: public, random, and their
    /// identity-resolved forms).
    public var peerAddressType: UInt8
    public var localResolvablePrivateAddress: [UInt8]
    public var peerResolvablePrivateAddress: [UInt8]
    /// In units of 1.25 ms.
    public var interval: UInt16
    public var latency: UInt16
    /// In units of 10 ms.
    public var supervisionTimeout: UInt16
    public var centralClockAccuracy: UInt8
    public var advertisingHandle: UInt8
    public var syncHandle: UInt16

    public init(
        subevent: UInt8 = LEMetaEvent.Subevent.connectionComplete, status: HCIStatus,
        handle: UInt16, role: Role, peerAddressType: UInt8, peerAddress: BluetoothAddress,
        interval: UInt16, latency: UInt16, supervisionTimeout: UInt16,
        centralClockAccuracy: UInt8 = 0, advertisingHandle: UInt8 = 0xFF,
        syncHandle: UInt16 = 0xFFFF
    ) {
        self.subevent = subevent
        self.status = status
        self.handle = handle
        self.role = role
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.localResolvablePrivateAddress = [UInt8](repeating: 0, count: 6)
        self.peerResolvablePrivateAddress = [UInt8](repeating: 0, count: 6)
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
        self.centralClockAccuracy = centralClockAccuracy
        self.advertisingHandle = advertisingHandle
        self.syncHandle = syncHandle
    }

    init(subevent: UInt8, reader: inout ByteReader) throws {
        self.subevent = subevent
        status = HCIStatus(rawValue: try reader.readUInt8())
        handle = try reader.readUInt16() & 0x0FFF
        let roleByte = try reader.readUInt8()
        guard let role = Role(rawValue: roleByte) else {
            throw HCIDecodingError.invalidField(
                what: "LE Connection Complete",
                detail: "role 0x\([roleByte].hexString)")
        }
        self.role = role
        peerAddressType = try reader.readUInt8()
        peerAddress = BluetoothAddress(
            littleEndianBytes: try reader.readBytes(6),
            kind: peerAddressType & 1 == 1 ? .random : .public)
        if subevent == LEMetaEvent.Subevent.connectionComplete {
            localResolvablePrivateAddress = [UInt8](repeating: 0, count: 6)
            peerResolvablePrivateAddress = [UInt8](repeating: 0, count: 6)
        } else {
            localResolvablePrivateAddress = try reader.readBytes(6)
            peerResolvablePrivateAddress = try reader.readBytes(6)
        }
        interval = try reader.readUInt16()
        latency = try reader.readUInt16()
        supervisionTimeout = try reader.readUInt16()
        centralClockAccuracy = try reader.readUInt8()
        if subevent == LEMetaEvent.Subevent.enhancedConnectionCompleteV2 {
            advertisingHandle = try reader.readUInt8()
            syncHandle = try reader.readUInt16()
        } else {
            advertisingHandle = 0xFF
            syncHandle = 0xFFFF
        }
    }

    var encoded: [UInt8] {
        var writer = ByteWriter()
        writer.write(subevent)
        writer.write(status.rawValue)
        writer.write(handle)
        writer.write(role.rawValue)
        writer.write(peerAddressType)
        writer.write(contentsOf: peerAddress.bytes)
        if subevent != LEMetaEvent.Subevent.connectionComplete {
            writer.write(contentsOf: localResolvablePrivateAddress)
            writer.write(contentsOf: peerResolvablePrivateAddress)
        }
        writer.write(interval)
        writer.write(latency)
        writer.write(supervisionTimeout)
        writer.write(centralClockAccuracy)
        if subevent == LEMetaEvent.Subevent.enhancedConnectionCompleteV2 {
            writer.write(advertisingHandle)
            writer.write(syncHandle)
        }
        return writer.bytes
    }
}
