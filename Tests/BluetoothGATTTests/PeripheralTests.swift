import BluetoothATT
import BluetoothCore
import Foundation
import LoopClock
import Synchronization
import TestHarness
import Testing

@testable import BluetoothGATT

/// The host side of the seam, in memory: records what the peripheral asks of the link.
final class MemoryLink: PeripheralLink, @unchecked Sendable {
    private let lock = NSLock()
    private var _sent: [(central: CentralID, pdu: [UInt8], isUpdate: Bool)] = []
    private var _timedOut: [CentralID] = []
    private var _latency: [(ConnectionLatency, CentralID)] = []

    func send(_ pdu: [UInt8], to central: CentralID) { locked { _sent.append((central, pdu, false)) } }
    func sendUpdate(_ update: ATTUpdate, to central: CentralID) {
        locked { _sent.append((central, update.encoded, true)) }
    }
    func disconnectAfterTransactionTimeout(_ central: CentralID) { locked { _timedOut.append(central) } }
    func requestConnectionLatency(_ latency: ConnectionLatency, for central: CentralID) {
        locked { _latency.append((latency, central)) }
    }

    /// PDUs sent since the last call, as hex, per central.
    func takeSent(to central: CentralID) -> [String] {
        let (responses, updates) = takeSentByKind(to: central)
        return (responses + updates).sorted { $0.index < $1.index }.map(\.hex)
    }

    /// PDUs sent since the last call, as hex, split into those sent as responses (`send`) and
    /// those sent as updates (`sendUpdate`), each with its place in the order sent.
    func takeSentByKind(to central: CentralID) -> (responses: [(index: Int, hex: String)], updates: [(index: Int, hex: String)]) {
        locked {
            let mine = _sent.enumerated().filter { $0.element.central == central }
            _sent.removeAll { $0.central == central }
            let responses = mine.filter { !$0.element.isUpdate }.map { ($0.offset, $0.element.pdu.hexString) }
            let updates = mine.filter { $0.element.isUpdate }.map { ($0.offset, $0.element.pdu.hexString) }
            return (responses, updates)
        }
    }
    var timedOut: [CentralID] { locked { _timedOut } }
    var latencyWishes: [String] { locked { _latency.map { "\($0.0)@\($0.1.rawValue)" } } }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

/// A clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = serverStart
    var now: LoopInstant {
        lock.lock()
        defer { lock.unlock() }
        return current
    }
    func advance(by duration: Duration) {
        lock.lock()
        current += duration
        lock.unlock()
    }
}

/// The peripheral's events as its sink delivered them, in the calls that produced them.
struct EventReader {
    let log = EventLog<PeripheralEvent>()

    init(_ peripheral: Peripheral) async {
        await peripheral.setEventSink(log.append)
    }

    /// The next `count` events.
    func take(_ count: Int) async throws -> [PeripheralEvent] {
        var events: [PeripheralEvent] = []
        while events.count < count { events.append(try await log.next(within: .seconds(5))) }
        return events
    }

    /// Every event not taken yet.
    func take() -> [PeripheralEvent] { log.takeAll() }
}

@Suite(.timeLimit(.minutes(1))) struct PeripheralTests {
    let link = MemoryLink()
    let clock = ManualClock()
    let central = CentralID(1)

    func makePeripheral(poweredOn: Bool = true) async -> (Peripheral, EventReader) {
        let clock = self.clock
        let peripheral = Peripheral(configuration: .init(deviceName: "test"), link: link, now: { clock.now })
        await peripheral.setRequestHandlers(
            GATTRequestHandlers(
                read: { request in .success(Array(repeating: 0x5A, count: 40 + request.offset * 0)) },
                write: { batch in batch.contains { $0.value == [0xEE] } ? .application(0x81) : nil }))
        let reader = await EventReader(peripheral)
        if poweredOn {
            await peripheral.updateState(.poweredOn)
            _ = reader.take()
        }
        return (peripheral, reader)
    }

    static let sensor = GATTService(
        uuid: BluetoothUUID(0x181A),
        characteristics: [
            GATTCharacteristic(uuid: BluetoothUUID(0x2A6E), properties: [.read, .notify], permissions: .readable, value: .dynamic),
            GATTCharacteristic(uuid: BluetoothUUID(0x2A6F), properties: [.read, .indicate], permissions: .readable, value: .dynamic)
        ])

    @Test func commandsOutsidePoweredOnFailClearly() async throws {
        let (peripheral, _) = await makePeripheral(poweredOn: false)
        let reader = await EventReader(peripheral)
        #expect(await peripheral.state == .unknown)
        await #expect(throws: PeripheralError.notPoweredOn(.unknown)) { try await peripheral.add(Self.sensor) }
        #expect(try await reader.take(1) == [.serviceAdded(.failure(.notPoweredOn(.unknown)))])
        await peripheral.updateState(.poweredOff)
        await #expect(throws: PeripheralError.notPoweredOn(.poweredOff)) { try await peripheral.removeAllServices() }
        await peripheral.centralConnected(central)
        #expect(await peripheral.connectedCentrals.isEmpty, "no connections below poweredOn")
        #expect(PeripheralError.notPoweredOn(.poweredOff).description == "the peripheral is poweredOff, not poweredOn")
        await peripheral.updateState(.poweredOn)
        #expect(reader.take() == [.stateChanged(.poweredOff), .stateChanged(.poweredOn)])
    }

    @Test func leavingPoweredOnDisconnectsAndUnsubscribesEveryone() async throws {
        let (peripheral, reader) = await makePeripheral()
        let service = try await peripheral.add(Self.sensor)
        let temperature = try #require(service.characteristic(BluetoothUUID(0x2A6E)))
        await peripheral.centralConnected(central)
        await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x01, 0x00], from: central)
        #expect(link.takeSent(to: central) == ["13"])
        await peripheral.updateState(.resetting)
        #expect(
            try await reader.take(6) == [
                .serviceAdded(.success(service)), .centralConnected(central), .subscribed(central, temperature),
                .unsubscribed(central, temperature), .centralDisconnected(central), .stateChanged(.resetting)
            ])
        #expect(await peripheral.connectedCentrals.isEmpty)
        await #expect(throws: PeripheralError.notPoweredOn(.resetting)) {
            try await peripheral.updateValue([1], for: temperature)
        }
    }

    @Test func subscriptionsAreEventsIncludingTheImplicitUnsubscribeOnDisconnect() async throws {
        let (peripheral, reader) = await makePeripheral()
        let service = try await peripheral.add(Self.sensor)
        let temperature = try #require(service.characteristic(BluetoothUUID(0x2A6E)))
        let humidity = try #require(service.characteristic(BluetoothUUID(0x2A6F)))
        await peripheral.centralConnected(central)
        await peripheral.centralConnected(CentralID(2))
        await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x01, 0x00], from: central)
        await peripheral.receive([0x12] + le(humidity.clientConfigurationHandle!) + [0x02, 0x00], from: central)
        await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x01, 0x00], from: CentralID(2))
        await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x00, 0x00], from: CentralID(2))
        await peripheral.centralDisconnected(central)
        #expect(
            reader.take() == [
                .serviceAdded(.success(service)), .centralConnected(central), .centralConnected(CentralID(2)),
                .subscribed(central, temperature), .subscribed(central, humidity),
                .subscribed(CentralID(2), temperature), .unsubscribed(CentralID(2), temperature),
                .unsubscribed(central, temperature), .unsubscribed(central, humidity), .centralDisconnected(central)
            ])
    }

    @Test func fullTransmitQueueReturnsFalseThenExactlyOneReadyEvent() async throws {
        let (peripheral, reader) = await makePeripheral()
        let service = try await peripheral.add(Self.sensor)
        let temperature = try #require(service.characteristic(BluetoothUUID(0x2A6E)))
        await peripheral.centralConnected(central)
        await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x01, 0x00], from: central)
        _ = link.takeSent(to: central)
        _ = reader.take()

        await peripheral.transmitRoomFreed(1)
        #expect(try await peripheral.updateValue([1], for: temperature) == true)
        #expect(try await peripheral.updateValue([2], for: temperature) == false)
        #expect(try await peripheral.updateValue([3], for: temperature) == false)
        #expect(link.takeSent(to: central) == ["1b" + le(temperature.valueHandle).hexString + "01"])
        #expect(reader.take() == [])
        await peripheral.transmitRoomFreed(2)
        await peripheral.transmitRoomFreed(1)
        #expect(reader.take() == [.readyToUpdateSubscribers], "one event, however much room frees")
        #expect(try await peripheral.updateValue([4], for: temperature) == true)
        #expect(link.takeSent(to: central) == ["1b" + le(temperature.valueHandle).hexString + "04"])
    }

    @Test func updatesAreTruncatedToEachCentralsMaximumLength() async throws {
        let (peripheral, reader) = await makePeripheral()
        let service = try await peripheral.add(Self.sensor)
        let temperature = try #require(service.characteristic(BluetoothUUID(0x2A6E)))
        let small = CentralID(1)
        let large = CentralID(2)
        let notSubscribed = CentralID(3)
        for id in [small, large, notSubscribed] { await peripheral.centralConnected(id) }
        await peripheral.receive([0x02, 0x40, 0x00], from: large)
        for id in [small, large] {
            await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x01, 0x00], from: id)
        }
        #expect(await peripheral.maximumUpdateValueLength(for: small) == 20)
        #expect(await peripheral.maximumUpdateValueLength(for: large) == 61)
        let events = reader.take()
        #expect(events.contains(.maximumUpdateValueLengthChanged(large, 61)))
        _ = (link.takeSent(to: small), link.takeSent(to: large))

        await peripheral.transmitRoomFreed(10)
        let value = (0..<100).map { UInt8($0) }
        #expect(try await peripheral.updateValue(value, for: temperature) == true)
        let handle = le(temperature.valueHandle).hexString
        #expect(link.takeSent(to: small) == ["1b" + handle + Array(value.prefix(20)).hexString])
        #expect(link.takeSent(to: large) == ["1b" + handle + Array(value.prefix(61)).hexString])
        #expect(link.takeSent(to: notSubscribed).isEmpty)

        // Only the named centrals; unsubscribed ones among them are ignored.
        #expect(try await peripheral.updateValue([7], for: temperature, onSubscribedCentrals: [large, notSubscribed]) == true)
        #expect(link.takeSent(to: small).isEmpty)
        #expect(link.takeSent(to: large) == ["1b" + handle + "07"])
    }

    @Test func indicationsWaitForConfirmationAndTimeOutAfter30Seconds() async throws {
        let (peripheral, _) = await makePeripheral()
        let service = try await peripheral.add(Self.sensor)
        let humidity = try #require(service.characteristic(BluetoothUUID(0x2A6F)))
        await peripheral.centralConnected(central)
        await peripheral.receive([0x12] + le(humidity.clientConfigurationHandle!) + [0x02, 0x00], from: central)
        _ = link.takeSent(to: central)
        await peripheral.transmitRoomFreed(10)
        let handle = le(humidity.valueHandle).hexString

        #expect(try await peripheral.updateValue([1], for: humidity) == true)
        #expect(try await peripheral.updateValue([2], for: humidity) == true)
        #expect(link.takeSent(to: central) == ["1d" + handle + "01"], "one indication outstanding at a time")
        await peripheral.receive([0x1E], from: central)
        #expect(link.takeSent(to: central) == ["1d" + handle + "02"])

        let sentAt = clock.now
        #expect(await peripheral.nextTransactionDeadline == sentAt + .seconds(30))
        clock.advance(by: .seconds(29))
        await peripheral.expireTransactions()
        #expect(link.timedOut.isEmpty)
        clock.advance(by: .seconds(1))
        await peripheral.expireTransactions()
        #expect(link.timedOut == [central])
        // The bearer is dead: nothing more is answered.
        await peripheral.receive([0x0A, 0x03, 0x00], from: central)
        #expect(link.takeSent(to: central).isEmpty)
    }

    /// The server says which PDUs are updates (they spent a transmit credit the host must count
    /// back): notifications and indications, Service Changed among them; responses are not.
    @Test func notificationsAndIndicationsReachTheLinkAsUpdatesAndResponsesDoNot() async throws {
        let (peripheral, _) = await makePeripheral()
        let service = try await peripheral.add(Self.sensor)
        let temperature = try #require(service.characteristic(BluetoothUUID(0x2A6E)))
        let humidity = try #require(service.characteristic(BluetoothUUID(0x2A6F)))
        await peripheral.centralConnected(central)
        await peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x01, 0x00], from: central)
        await peripheral.receive([0x12] + le(humidity.clientConfigurationHandle!) + [0x02, 0x00], from: central)
        await peripheral.receive([0x12, 0x0B, 0x00, 0x02, 0x00], from: central)
        await peripheral.transmitRoomFreed(10)
        #expect(try await peripheral.updateValue([1], for: temperature) == true)
        #expect(try await peripheral.updateValue([2], for: humidity) == true)
        await peripheral.receive([0x1E], from: central)
        await peripheral.receive([0x0A] + le(temperature.valueHandle), from: central)
        let added = try await peripheral.add(GATTService(uuid: BluetoothUUID(0x180F), characteristics: []))
        #expect(added.handles == 23...23)

        let sent = link.takeSentByKind(to: central)
        #expect(sent.responses.map(\.hex) == ["13", "13", "13", "0b" + String(repeating: "5a", count: 22)])
        #expect(
            sent.updates.map(\.hex) == [
                "1b" + le(temperature.valueHandle).hexString + "01",
                "1d" + le(humidity.valueHandle).hexString + "02",
                "1d0a00" + "1700" + "1700"
            ])
    }

    @Test func addingAndRemovingServicesIndicatesServiceChanged() async throws {
        let (peripheral, reader) = await makePeripheral()
        await peripheral.centralConnected(central)
        await peripheral.transmitRoomFreed(10)
        // Enable Service Changed indications (its CCCD is handle 11).
        await peripheral.receive([0x12, 0x0B, 0x00, 0x02, 0x00], from: central)
        #expect(link.takeSent(to: central) == ["13"])
        let service = try await peripheral.add(Self.sensor)
        #expect(service.handles == 16...22)
        #expect(link.takeSent(to: central) == ["1d0a00" + "1000" + "1600"])
        await peripheral.receive([0x1E], from: central)
        try await peripheral.remove(service.id)
        #expect(link.takeSent(to: central) == ["1d0a00" + "1000" + "1600"])
        await #expect(throws: PeripheralError.database(.unknownService(service.id))) { try await peripheral.remove(service.id) }
        let events = reader.take()
        #expect(events.contains(.serviceAdded(.success(service))))
        #expect(events.contains(.serviceRemoved(.success(service))))
        #expect(events.contains(.serviceRemoved(.failure(.database(.unknownService(service.id))))))
    }

    @Test func dynamicValuesAreServedByTheHandlers() async throws {
        let (peripheral, _) = await makePeripheral()
        let writable = GATTService(
            uuid: BluetoothUUID(0xBBB0),
            characteristics: [
                GATTCharacteristic(
                    uuid: BluetoothUUID(0xBBB1), properties: [.read, .write], permissions: [.readable, .writeable],
                    value: .dynamic)
            ])
        let service = try await peripheral.add(writable)
        let value = le(service.characteristics[0].valueHandle)
        await peripheral.centralConnected(central)
        await peripheral.receive([0x0C] + value + [0x16, 0x00], from: central)
        #expect(link.takeSent(to: central) == ["0d" + String(repeating: "5a", count: 18)])
        await peripheral.receive([0x12] + value + [0xEE], from: central)
        #expect(link.takeSent(to: central) == ["0112" + value.hexString + "81"])
    }

    /// The program hears that a write was applied in the call that carried it, after its answer
    /// went to the link (so what it then sends follows the answer), and only when it was applied.
    @Test func appliedWritesAreReportedAfterTheirAnswer() async throws {
        let link = self.link
        let central = self.central
        let peripheral = Peripheral(configuration: .init(deviceName: "test"), link: link)
        let sentWhenApplied = Mutex<[[String]]>([])
        await peripheral.setRequestHandlers(
            GATTRequestHandlers(
                read: { _ in .success([]) },
                write: { batch in batch.contains { $0.value == [0xEE] } ? .application(0x81) : nil },
                applied: { sentWhenApplied.withLock { $0.append(link.takeSent(to: central)) } }))
        await peripheral.updateState(.poweredOn)
        let writable = GATTService(
            uuid: BluetoothUUID(0xBBB0),
            characteristics: [
                GATTCharacteristic(
                    uuid: BluetoothUUID(0xBBB1), properties: [.read, .write, .writeWithoutResponse],
                    permissions: [.readable, .writeable], value: .dynamic)
            ])
        let value = le(try await peripheral.add(writable).characteristics[0].valueHandle)
        await peripheral.centralConnected(central)

        await peripheral.receive([0x12] + value + [0x01], from: central)
        #expect(sentWhenApplied.withLock { $0 } == [["13"]], "the Write Response was out first")
        await peripheral.receive([0x12] + value + [0xEE], from: central)
        #expect(link.takeSent(to: central) == ["0112" + value.hexString + "81"])
        await peripheral.receive([0x52] + value + [0x02], from: central)
        #expect(sentWhenApplied.withLock { $0 } == [["13"], []], "a refused write is not reported; a Write Command is")
    }

    @Test func latencyWishesReachTheHost() async throws {
        let (peripheral, _) = await makePeripheral()
        await peripheral.centralConnected(central)
        try await peripheral.setDesiredConnectionLatency(.high, for: central)
        try await peripheral.setDesiredConnectionLatency(.low, for: central)
        #expect(link.latencyWishes == ["high@1", "low@1"])
        await #expect(throws: PeripheralError.server(.unknownCentral(CentralID(9)))) {
            try await peripheral.setDesiredConnectionLatency(.medium, for: CentralID(9))
        }
    }

    @Test func updateValueRejectsCharacteristicsThatCannotNotify() async throws {
        let (peripheral, _) = await makePeripheral()
        let plain = GATTService(
            uuid: BluetoothUUID(0xBBB0),
            characteristics: [
                GATTCharacteristic(uuid: BluetoothUUID(0xBBB1), properties: .read, permissions: .readable, value: .fixed([1]))
            ])
        let service = try await peripheral.add(plain)
        await #expect(throws: PeripheralError.server(.characteristicCannotNotify(BluetoothUUID(0xBBB1)))) {
            try await peripheral.updateValue([1], for: service.characteristics[0])
        }
        try await peripheral.remove(service.id)
        await #expect(throws: PeripheralError.server(.characteristicNotPublished(BluetoothUUID(0xBBB1)))) {
            try await peripheral.updateValue([1], for: service.characteristics[0])
        }
    }
}

func le(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
