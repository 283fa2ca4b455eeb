import BluetoothATT
import BluetoothCore
import Foundation
import LoopClock

@testable import BluetoothGATT

/// The test database: GAP (1–7) and GATT (8–15), then a secondary service and three primary
/// services whose handles the tests state explicitly.
///
/// | handles | service |
/// |---|---|
/// | 16–18 | secondary FFF0: FFF1 fixed [0x2A] |
/// | 19–29 | primary 180D: include 16–18; 2A37 notify (CCCD 23, CUD 24); 2A39 write/write without response (26); 2A38 fixed [0x01] + 2904 (29) |
/// | 30–42 | primary 6E400001…: 6E400003 notify/indicate/write + reliable write (32, ext 33, CCCD 34); 6E400002 read encrypted (36); FFF2 read authenticated (38); FFF3 read authorized (40); FFF4 write encrypted (42) |
/// | 43–46 | primary 180F: 2A19 fixed [100] notify (45, CCCD 46) |
///
/// FuzzATTServer (Tests/Fuzz) serves a copy of these services, so that seeds taken from these
/// tables hit real handles: change both (why it is a copy: see there).
enum Fixture {
    static let nordicService = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let nordicRX = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let nordicTX = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!

    static let secondary = GATTService(
        uuid: BluetoothUUID(0xFFF0), isPrimary: false,
        characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0xFFF1), properties: .read, permissions: .readable, value: .fixed([0x2A]))
        ])

    static func heartRate(including secondary: GATTServiceID) -> GATTService {
        GATTService(
            uuid: BluetoothUUID(0x180D), includedServices: [secondary],
            characteristics: [
                GATTCharacteristic(
                    uuid: BluetoothUUID(0x2A37), properties: [.read, .notify], permissions: .readable,
                    value: .dynamic, descriptors: [.userDescription("Heart Rate")]),
                GATTCharacteristic(
                    uuid: BluetoothUUID(0x2A39), properties: [.write, .writeWithoutResponse],
                    permissions: .writeable, value: .dynamic),
                GATTCharacteristic(
                    uuid: BluetoothUUID(0x2A38), properties: .read, permissions: .readable, value: .fixed([0x01]),
                    descriptors: [.presentationFormat(format: 0x04, exponent: 0, unit: 0x2700)])
            ])
    }

    static let nordic = GATTService(
        uuid: nordicService,
        characteristics: [
            GATTCharacteristic(
                uuid: nordicTX, properties: [.read, .notify, .indicate, .write],
                extendedProperties: .reliableWrite, permissions: [.readable, .writeable], value: .dynamic),
            GATTCharacteristic(uuid: nordicRX, properties: .read, permissions: .readEncryptionRequired, value: .dynamic),
            GATTCharacteristic(uuid: BluetoothUUID(0xFFF2), properties: .read, permissions: .readAuthenticationRequired, value: .dynamic),
            GATTCharacteristic(
                uuid: BluetoothUUID(0xFFF3), properties: [.read], permissions: [.readable, .readAuthorizationRequired], value: .dynamic),
            GATTCharacteristic(uuid: BluetoothUUID(0xFFF4), properties: .write, permissions: .writeEncryptionRequired, value: .dynamic)
        ])

    static let battery = GATTService(
        uuid: BluetoothUUID(0x180F),
        characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], permissions: .readable, value: .fixed([100]))
        ])

    /// The value every dynamic characteristic reads as.
    static func value(of uuid: BluetoothUUID) -> [UInt8]? {
        switch uuid {
        case BluetoothUUID(0x2A37): Array(0..<100)
        case nordicRX: [0x6E, 0x02]
        case nordicTX: [0x03]
        case BluetoothUUID(0xFFF2): [0xF2]
        case BluetoothUUID(0xFFF3): [0xF3]
        default: nil
        }
    }

    /// A server holding the test database, its write log, and published services by name.
    static func server(configuration: GATTServer.Configuration = .init()) throws -> (GATTServer, WriteLog, [PublishedService]) {
        let log = WriteLog()
        let server = GATTServer(
            configuration: configuration,
            handlers: GATTRequestHandlers(
                read: { request in
                    guard let value = value(of: request.characteristic.uuid) else { return .failure(.unlikelyError) }
                    return .success(value)
                },
                write: { batch in
                    // The program refuses any batch containing a value starting 0xEE.
                    if batch.contains(where: { $0.value.first == 0xEE }) { return .application(0x80) }
                    log.append(batch)
                    return nil
                }))
        let now = serverStart
        let secondaryService = try server.addService(secondary, now: now)
        let heartRateService = try server.addService(heartRate(including: secondaryService.id), now: now)
        let nordicService = try server.addService(nordic, now: now)
        let batteryService = try server.addService(battery, now: now)
        return (server, log, [secondaryService, heartRateService, nordicService, batteryService])
    }
}

/// Write batches the fixture's handler accepted.
final class WriteLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [[GATTWriteRequest]] = []

    func append(_ batch: [GATTWriteRequest]) {
        lock.lock()
        defer { lock.unlock() }
        storage.append(batch)
    }

    var batches: [[GATTWriteRequest]] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

/// The server's time at the start of a test: pure, it takes time as an argument.
let serverStart = LoopInstant(nanoseconds: 1_000_000_000)

extension GATTServer {
    /// Feeds one PDU given as hex and returns the PDUs sent back (as hex) and the events.
    func exchange(
        _ hex: String, from central: CentralID = CentralID(1),
        now: LoopInstant = serverStart
    ) -> (sent: [String], events: [GATTServerEvent]) {
        receive([UInt8](hexString: hex)!, from: central, now: now)
        return split(takeOutput())
    }

    func split(_ output: [GATTServerOutput]) -> (sent: [String], events: [GATTServerEvent]) {
        var sent: [String] = []
        var events: [GATTServerEvent] = []
        for item in output {
            switch item {
            case .send(let pdu, _): sent.append(pdu.hexString)
            case .sendUpdate(let update, _): sent.append(update.encoded.hexString)
            case .event(let event): events.append(event)
            }
        }
        return (sent, events)
    }
}
