import BluetoothATT
import BluetoothCore

@testable import BluetoothGATT

/// A minimal GATT client over the server, speaking only through ATT PDUs, for discovery tests.
struct GATTClient {
    struct Service: Hashable {
        let start: UInt16
        let end: UInt16
        let uuid: BluetoothUUID
    }

    struct Include: Hashable {
        let handle: UInt16
        let start: UInt16
        let end: UInt16
        let uuid: BluetoothUUID?
    }

    struct Characteristic: Hashable {
        let declaration: UInt16
        let properties: UInt8
        let valueHandle: UInt16
        let uuid: BluetoothUUID
    }

    let server: GATTServer
    let central: CentralID

    enum Failure: Error { case unexpected(ATTPDU) }

    func request(_ pdu: ATTPDU) throws -> ATTPDU {
        server.receive(pdu.encoded, from: central, now: serverStart)
        let sent = server.takeOutput().compactMap { item -> [UInt8]? in
            if case .send(let bytes, let to) = item, to == central { return bytes } else { return nil }
        }
        guard sent.count == 1 else { throw Failure.unexpected(.readResponse([])) }
        return try ATTPDU(decoding: sent[0])
    }

    /// Runs a paging discovery: `page(start)` returns the entries found and the last handle seen,
    /// or nil at Attribute Not Found.
    private func paged<Entry>(
        from start: UInt16, to end: UInt16,
        _ page: (UInt16) throws -> ([Entry], UInt16)?
    ) throws -> [Entry] {
        var all: [Entry] = []
        var next = start
        while next <= end, let (entries, last) = try page(next) {
            all += entries
            guard last < end, last != .max else { break }
            next = last + 1
        }
        return all
    }

    func services(type: BluetoothUUID) throws -> [Service] {
        try paged(from: 1, to: 0xFFFF) { start in
            switch try request(.readByGroupTypeRequest(ATTHandleRange(start: start, end: 0xFFFF), type: type)) {
            case .readByGroupTypeResponse(let groups):
                return (
                    groups.map {
                        Service(
                            start: $0.handle, end: $0.endGroupHandle,
                            uuid: BluetoothUUID(littleEndianBytes: $0.value)!)
                    },
                    groups.last!.endGroupHandle
                )
            case .errorResponse(_, _, .attributeNotFound): return nil
            case let other: throw Failure.unexpected(other)
            }
        }
    }

    func includes(of service: Service) throws -> [Include] {
        try paged(from: service.start, to: service.end) { start in
            switch try request(.readByTypeRequest(ATTHandleRange(start: start, end: service.end), type: .includedService)) {
            case .readByTypeResponse(let entries):
                return (
                    entries.map { entry in
                        var reader = ByteReader(entry.value)
                        let start = try! reader.readUInt16()
                        let end = try! reader.readUInt16()
                        return Include(
                            handle: entry.handle, start: start, end: end,
                            uuid: BluetoothUUID(littleEndianBytes: reader.readRemaining()))
                    }, entries.last!.handle
                )
            case .errorResponse(_, _, .attributeNotFound): return nil
            case let other: throw Failure.unexpected(other)
            }
        }
    }

    func characteristics(of service: Service) throws -> [Characteristic] {
        try paged(from: service.start, to: service.end) { start in
            switch try request(.readByTypeRequest(ATTHandleRange(start: start, end: service.end), type: .characteristicDeclaration)) {
            case .readByTypeResponse(let entries):
                return (
                    entries.map { entry in
                        var reader = ByteReader(entry.value)
                        let properties = try! reader.readUInt8()
                        let value = try! reader.readUInt16()
                        return Characteristic(
                            declaration: entry.handle, properties: properties, valueHandle: value,
                            uuid: BluetoothUUID(littleEndianBytes: reader.readRemaining())!)
                    }, entries.last!.handle
                )
            case .errorResponse(_, _, .attributeNotFound): return nil
            case let other: throw Failure.unexpected(other)
            }
        }
    }

    /// Find Information over a range: every handle and type in it.
    func information(from start: UInt16, to end: UInt16) throws -> [ATTHandleUUID] {
        guard start <= end else { return [] }
        return try paged(from: start, to: end) { start in
            switch try request(.findInformationRequest(ATTHandleRange(start: start, end: end))) {
            case .findInformationResponse(let entries): return (entries, entries.last!.handle)
            case .errorResponse(_, _, .attributeNotFound): return nil
            case let other: throw Failure.unexpected(other)
            }
        }
    }

    /// A whole value: Read, then Read Blob while the response was full.
    func readLong(_ handle: UInt16, mtu: Int) throws -> [UInt8] {
        guard case .readResponse(var value) = try request(.readRequest(handle: handle)) else {
            throw Failure.unexpected(.readRequest(handle: handle))
        }
        var last = value.count
        while last == mtu - 1 {
            guard case .readBlobResponse(let part) = try request(.readBlobRequest(handle: handle, offset: UInt16(value.count))) else {
                break
            }
            value += part
            last = part.count
        }
        return value
    }
}
