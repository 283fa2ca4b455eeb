import BluetoothATT
import BluetoothCore
import Foundation
import Testing

@testable import BluetoothGATT

/// Dynamic descriptors: reads and writes go to the program's handlers, which see the central and
/// the descriptor, so a value can be kept per central; writes answer what the handler says.
///
/// | handle | attribute |
/// |---|---|
/// | 16 | primary service 181A |
/// | 17–18 | 2A6E declaration, value (read, notify) |
/// | 19 | CCCD |
/// | 20 | User Description "t" (fixed) |
/// | 21 | 290D dynamic, read + write |
/// | 22 | 290B dynamic, read open, write needs encryption |
/// | 23 | 290C dynamic, read only |
@Suite struct DynamicDescriptorTests {
    /// The handler's store: one value per (central, descriptor handle); writes of a first byte above
    /// 0x09 are refused with 0x81, empty ones with 0x80.
    final class Store: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String: [UInt8]] = [:]
        private(set) var seen: [GATTWriteRequest] = []

        var handlers: GATTRequestHandlers {
            GATTRequestHandlers(
                read: { [self] request in
                    guard let descriptor = request.descriptor else { return .success([0x11, 0x22]) }
                    return .success(lock.withLock { values["\(request.central)/\(descriptor.handle)"] } ?? [0x00])
                },
                write: { [self] batch in
                    for request in batch {
                        guard let first = request.value.first else { return .application(0x80) }
                        if first > 0x09 { return .application(0x81) }
                    }
                    lock.withLock {
                        for request in batch {
                            seen.append(request)
                            values["\(request.central)/\(request.descriptor!.handle)"] = request.value
                        }
                    }
                    return nil
                })
        }
    }

    static func server() throws -> (GATTServer, Store, PublishedService) {
        let store = Store()
        let server = GATTServer(handlers: store.handlers)
        let service = try server.addService(
            GATTService(
                uuid: BluetoothUUID(0x181A),
                characteristics: [
                    GATTCharacteristic(
                        uuid: BluetoothUUID(0x2A6E), properties: [.read, .notify], permissions: .readable,
                        value: .dynamic,
                        descriptors: [
                            .userDescription("t"),
                            .dynamic(BluetoothUUID(0x290D), permissions: [.readable, .writeable]),
                            .dynamic(BluetoothUUID(0x290B), permissions: [.readable, .writeEncryptionRequired]),
                            .dynamic(BluetoothUUID(0x290C), permissions: .readable)
                        ])
                ]), now: serverStart)
        return (server, store, service)
    }

    static let exchanges: [Exchange] = [
        Exchange(
            "discovery lists the dynamic descriptors like any other",
            [("04 1300 1700", "05 01 1300 0229 1400 0129 1500 0d29 1600 0b29 1700 0c29")]),
        Exchange("a read before any write is the handler's default", [("0a 1500", "0b 00")]),
        Exchange("a write is stored and read back", [("12 1500 0301", "13"), ("0a 1500", "0b 0301")]),
        Exchange("read by type reaches the handler too", [("12 1500 02", "13"), ("08 0100 ffff 0d29", "09 03 1500 02")]),
        Exchange(
            "the handler's application error is the answer, nothing stored",
            [("12 1500 0a", "01 12 1500 81"), ("12 1500", "01 12 1500 80"), ("0a 1500", "0b 00")]),
        Exchange("write permission needs encryption", [("12 1600 01", "01 12 1600 0f")]),
        Exchange(
            "write permission needs encryption, link encrypted", [("12 1600 01", "13"), ("0a 1600", "0b 01")],
            security: LinkSecurity(isEncrypted: true, encryptionKeySize: 16)),
        Exchange("a read-only dynamic descriptor refuses writes", [("12 1700 01", "01 12 1700 03")]),
        Exchange("descriptors take no Write Command (dropped, unanswered)", [("52 1500 05", ""), ("0a 1500", "0b 00")]),
        Exchange("a fixed descriptor stays read-only", [("12 1400 41", "01 12 1400 03"), ("0a 1400", "0b 74")]),
        Exchange(
            "prepared writes reach the handler on execute",
            [
                ("16 1500 0000 04", "17 1500 0000 04"), ("16 1500 0100 0102", "17 1500 0100 0102"),
                ("18 01", "19"), ("0a 1500", "0b 040102")
            ])
    ]

    @Test(arguments: exchanges)
    func answersExactly(_ exchange: Exchange) throws {
        let (server, _, _) = try Self.server()
        server.connect(CentralID(1), security: exchange.security)
        for step in exchange.steps {
            let sent = server.exchange(step.request).sent
            #expect(sent == (step.response.isEmpty ? [] : [step.response]), "request \(step.request)")
        }
    }

    /// Each central has its own value when the handler keeps one per central, and the request names
    /// the descriptor (its handle, type and position in the program's list) and the characteristic.
    @Test func requestsNameTheCentralAndTheDescriptor() throws {
        let (server, store, service) = try Self.server()
        server.connect(CentralID(1))
        server.connect(CentralID(2))
        #expect(server.exchange("12 1500 01".replacingOccurrences(of: " ", with: ""), from: CentralID(1)).sent == ["13"])
        #expect(server.exchange("12 1500 03".replacingOccurrences(of: " ", with: ""), from: CentralID(2)).sent == ["13"])
        #expect(server.exchange("0a1500", from: CentralID(1)).sent == ["0b01"])
        #expect(server.exchange("0a1500", from: CentralID(2)).sent == ["0b03"])
        let characteristic = try #require(service.characteristic(BluetoothUUID(0x2A6E)))
        let descriptor = PublishedDescriptor(
            characteristic: characteristic, uuid: BluetoothUUID(0x290D), handle: 21,
            position: 1)
        #expect(
            store.seen == [
                GATTWriteRequest(
                    central: CentralID(1), characteristic: characteristic, offset: 0, value: [1], kind: .request,
                    descriptor: descriptor),
                GATTWriteRequest(
                    central: CentralID(2), characteristic: characteristic, offset: 0, value: [3], kind: .request,
                    descriptor: descriptor)
            ])
        // The characteristic value is still served as a value, not as a descriptor.
        #expect(server.exchange("0a1200").sent == ["0b1122"])
    }
}
