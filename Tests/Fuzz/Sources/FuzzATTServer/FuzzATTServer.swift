import BluetoothATT
import BluetoothCore
import BluetoothGATT
import LoopClock

/// The input is a script of records run against a fresh server holding a small database (the
/// same layout as BluetoothGATTTests' fixture, so seeds taken from its tables hit real handles):
///
/// - `0x00...0x02, length, PDU bytes`: central 1...3 sends that PDU;
/// - `0x03, action, parameter`: the host or program acts between PDUs: the action's low nibble
///   picks transmit credits, time passing, a value update, a reconnection or a security change,
///   its high nibble the central; the parameter is the amount or the security flags
///   (0x80 encrypted, 0x40 authenticated, 0x20 authorized, bits 0-3 the key size - 7).
///
/// After every PDU: a request was answered exactly once (by its response or by an Error Response
/// naming it) unless the bearer was or got closed, nothing else was answered, and no answer is
/// longer than the ATT_MTU in force when the request arrived. A violation traps, which libFuzzer
/// reports as a crash with the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var script = Script(UnsafeRawBufferPointer(start: start, count: count))
    let session = Session()
    while let record = script.nextRecord() {
        switch record {
        case .pdu(let pdu, let central): session.deliver(pdu, from: central)
        case .action(let code, let parameter): session.act(code, parameter)
        }
    }
    return 0
}

private struct Script {
    enum Record {
        case pdu([UInt8], CentralID)
        case action(UInt8, UInt8)
    }

    let bytes: UnsafeRawBufferPointer
    var position = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    mutating func nextRecord() -> Record? {
        guard position + 1 < bytes.count else { return nil }
        let kind = bytes[position] & 0x03
        let argument = bytes[position + 1]
        position += 2
        if kind == 3 {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return .action(argument, bytes[position])
        }
        let end = min(position + Int(argument), bytes.count)
        defer { position = end }
        return .pdu(Array(bytes[position..<end]), CentralID(UInt16(kind) + 1))
    }
}

private final class Session {
    let server: GATTServer
    let centrals = [CentralID(1), CentralID(2), CentralID(3)]
    var now = LoopInstant(nanoseconds: 1_000_000_000)
    var notifiable: [PublishedCharacteristic]

    init() {
        server = GATTServer(
            configuration: GATTServer.Configuration(preparedWriteQueueLimit: 8, indicationQueueLimit: 4),
            handlers: GATTRequestHandlers(
                read: { request in
                    request.characteristic.uuid == BluetoothUUID(0xFFF3)
                        ? .failure(.unlikelyError) : .success(Array(0..<100))
                },
                write: { batch in batch.contains { $0.value.first == 0xEE } ? .application(0x80) : nil }))
        do {
            let secondary = try server.addService(Database.secondary, now: now)
            let published = [
                try server.addService(Database.heartRate(including: secondary.id), now: now),
                try server.addService(Database.nordic, now: now),
                try server.addService(Database.battery, now: now)
            ]
            notifiable = published.flatMap(\.characteristics).filter { $0.clientConfigurationHandle != nil }
        } catch {
            fatalError("the fuzz database is invalid: \(error)")
        }
        for central in centrals { server.connect(central) }
        _ = server.takeOutput()
    }

    func deliver(_ pdu: [UInt8], from central: CentralID) {
        guard let before = server.snapshot(of: central) else { fatalError("\(central) is not connected") }
        server.receive(pdu, from: central, now: now)
        let answers = server.takeOutput().compactMap { output -> [UInt8]? in
            // Notifications and indications come as `.sendUpdate`: server-initiated, not answers.
            guard case .send(let bytes, let to) = output, to == central else { return nil }
            return bytes
        }
        let after = server.snapshot(of: central)
        let isRequest = !pdu.isEmpty && ATTOpcode.isRequest(pdu[0])
        guard isRequest, !before.isClosed, after?.isClosed == false else {
            guard answers.isEmpty else {
                fatalError("\(pdu.hexString) needs no answer but got \(answers.map(\.hexString))")
            }
            return
        }
        guard answers.count == 1, let answer = answers.first else {
            fatalError("request \(pdu.hexString) got \(answers.count) answers: \(answers.map(\.hexString))")
        }
        let answered = answer[0] == 0x01 ? (answer.count == 5 ? answer[1] : nil) : answer[0] &- 1
        guard answered == pdu[0] else { fatalError("request \(pdu.hexString) answered by \(answer.hexString)") }
        guard answer.count <= Int(before.mtu) else {
            fatalError("answer of \(answer.count) bytes exceeds the MTU \(before.mtu)")
        }
    }

    func act(_ code: UInt8, _ parameter: UInt8) {
        let central = centrals[Int(code >> 4) % centrals.count]
        switch code & 0x0F {
        case 0:
            server.addTransmitCredits(Int(parameter % 8), now: now)
        case 1:
            now += .milliseconds(Int(parameter) * 250)
            server.expireTransactions(now: now)
        case 2:
            let characteristic = notifiable[Int(code >> 4) % notifiable.count]
            _ = try? server.updateValue(Array(repeating: parameter, count: Int(parameter)), for: characteristic, now: now)
        case 3:
            server.disconnect(central)
            server.connect(central, security: security(parameter))
        case 4:
            server.setSecurity(security(parameter), for: central)
        default:
            break
        }
        _ = server.takeOutput()
    }

    func security(_ flags: UInt8) -> LinkSecurity {
        let isEncrypted = flags & 0x80 != 0
        return LinkSecurity(
            isEncrypted: isEncrypted, isAuthenticated: isEncrypted && flags & 0x40 != 0,
            encryptionKeySize: isEncrypted ? 7 + Int(flags & 0x0F) % 10 : 0,
            isAuthorized: flags & 0x20 != 0)
    }
}

/// Services with every kind of attribute the server handles: an included secondary service,
/// notify/indicate characteristics with CCCDs, reliable writes, descriptors, and each
/// permission (encryption, authentication, authorization).
///
/// A copy of BluetoothGATTTests' Fixture services (change both), not shared through TestHarness:
/// linked into this libFuzzer binary, the harness (Swift Testing, Foundation, libmosquitto) left
/// libFuzzer without coverage feedback ("no interesting inputs", Swift 6.3.1).
private enum Database {
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
}
