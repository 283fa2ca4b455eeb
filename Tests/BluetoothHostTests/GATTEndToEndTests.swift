import BluetoothATT
import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import EventLoop
import Foundation
import Logging
import StateFile
import TestHarness
import Testing

@testable import BluetoothHost

/// Values of the test service's dynamic characteristics, shared by every central.
final class ValueStore: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [UInt16: [UInt8]] = [:]

    func handlers(longValue: [UInt8]) -> GATTRequestHandlers {
        GATTRequestHandlers(
            read: { request in
                .success(self.lock.withLock { self.values[request.characteristic.valueHandle] } ?? longValue)
            },
            write: { batch in
                self.lock.withLock {
                    for request in batch {
                        let old = self.values[request.characteristic.valueHandle] ?? []
                        guard request.offset <= old.count else { continue }
                        self.values[request.characteristic.valueHandle] = Array(old.prefix(request.offset)) + request.value
                    }
                }
                return nil
            })
    }
}

/// gattway's host and GATT server against Bumble phones on the virtual controller: the issue's
/// "must show" list, end to end.
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct GATTEndToEndTests {
    static let serviceUUID = BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let shortUUID = BluetoothUUID("6E400002-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let longUUID = BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let writableUUID = BluetoothUUID("6E400004-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let notifyUUID = BluetoothUUID("6E400005-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let indicateUUID = BluetoothUUID("6E400006-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let longValue = (0..<300).map { UInt8($0 % 251) }
    static let name = "gattway-gatt"

    static let service = GATTService(
        uuid: serviceUUID,
        characteristics: [
            GATTCharacteristic(uuid: shortUUID, properties: [.read], permissions: [.readable], value: .fixed([1, 2, 3])),
            GATTCharacteristic(uuid: longUUID, properties: [.read], permissions: [.readable], value: .dynamic),
            GATTCharacteristic(
                uuid: writableUUID, properties: [.read, .write, .writeWithoutResponse],
                permissions: [.readable, .writeable], value: .dynamic),
            GATTCharacteristic(uuid: notifyUUID, properties: [.read, .notify], permissions: [.readable], value: .dynamic),
            GATTCharacteristic(
                uuid: indicateUUID, properties: [.read, .indicate], permissions: [.readable],
                value: .dynamic)
        ])

    struct Running {
        let controller: VirtualController
        let host: PeripheralHost
        let peripheral: Peripheral
        /// The peripheral's events, from the host's start.
        let events: EventLog<PeripheralEvent>
        let published: PublishedService
        let task: Task<Void, Never>

        func stop() {
            task.cancel()
            controller.stop()
        }

        func handle(_ uuid: BluetoothUUID) -> Int { Int(published.characteristic(uuid)!.valueHandle) }
        var longHandle: Int { handle(GATTEndToEndTests.longUUID) }
        var writableHandle: Int { handle(GATTEndToEndTests.writableUUID) }

        /// A phone that found gattway by name and connected.
        func connectedPhone(mtu: Int? = nil) async throws -> Phone {
            let phone = try await Phone(controllerPort: controller.tcpPort)
            let found = try await phone.expect("scan", ["name": GATTEndToEndTests.name])
            try await phone.expect("connect", ["address": try #require(found.string("address"))])
            if let mtu { try await phone.expect("mtu", ["mtu": mtu]) }
            return phone
        }
    }

    /// gattway's host on `controller` (a fresh one when nil), through `transport` (the
    /// controller's TCP port when nil).
    static func start(
        controller: VirtualController? = nil, transport: HCITransportSpec? = nil,
        capacity: Int = 8
    ) async throws -> Running {
        let virtual = if let controller { controller } else { try await VirtualController() }
        let logger = Logger(label: "gatt-e2e", factory: { StreamLogHandler.standardError(label: $0) })
        let binding = GATTPeripheralBinding(configuration: GATTServer.Configuration(deviceName: name))
        let host = PeripheralHost(
            configuration: HostConfiguration(
                transport: transport ?? .tcp(host: "127.0.0.1", port: UInt16(virtual.tcpPort)),
                stateDirectory: try temporaryDirectory("e2e").path,
                advertising: AdvertisingSettings(localName: name, serviceUUIDs: [serviceUUID], intervalMilliseconds: 20),
                transmitQueueCapacity: capacity, reconnectDelays: [.milliseconds(100), .milliseconds(300)]),
            peripheral: binding, stateWriter: StateFileWriter(), logger: logger)
        let peripheral = binding.peripheral
        await peripheral.setRequestHandlers(ValueStore().handlers(longValue: longValue))
        let events = EventLog<PeripheralEvent>()
        await peripheral.setEventSink(events.append)
        let task = Task(executorPreference: EventLoop.shared) { await host.run() }
        _ = try await events.next { $0 == .stateChanged(.poweredOn) }
        let published = try await peripheral.add(service)
        return Running(
            controller: virtual, host: host, peripheral: peripheral, events: events, published: published, task: task)
    }

    @Test func onePhoneDoesEverything() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        try await Self.onePhoneDoesEverything(running)
    }

    /// The issue's single-phone list: scan, connect, reads (short and Read Blob), MTU 517,
    /// discovery, writes (request, command, prepared), notifications and indications, and the
    /// implicit unsubscribes of a disconnection.
    static func onePhoneDoesEverything(_ running: Running) async throws {
        let phone = try await Phone(controllerPort: running.controller.tcpPort)
        let found = try await phone.expect("scan", ["name": Self.name])
        #expect((found["uuids"] as? [String] ?? []).contains { BluetoothUUID($0) == Self.serviceUUID })
        try await phone.expect("connect", ["address": try #require(found.string("address"))])

        // Before the MTU exchange (23): 300 bytes take a Read Request and Read Blob Requests.
        #expect(try await phone.expect("read", ["handle": running.longHandle]).bytes("value") == Self.longValue)
        #expect(try await phone.expect("mtu", ["mtu": 517]).int("mtu") == 517)

        let discovered = try await phone.expect("discover")
        let services = discovered["services"] as? [[String: Any]] ?? []
        let ours = try #require(services.first { BluetoothUUID($0["uuid"] as? String ?? "") == Self.serviceUUID })
        let characteristics = ours["characteristics"] as? [[String: Any]] ?? []
        #expect(
            characteristics.compactMap { BluetoothUUID($0["uuid"] as? String ?? "") }
                == [Self.shortUUID, Self.longUUID, Self.writableUUID, Self.notifyUUID, Self.indicateUUID])
        #expect(
            characteristics.compactMap { $0["value_handle"] as? Int }
                == running.published.characteristics.map { Int($0.valueHandle) })
        #expect(services.contains { BluetoothUUID($0["uuid"] as? String ?? "") == BluetoothUUID(0x1800) })

        #expect(try await phone.expect("read", ["handle": running.handle(Self.shortUUID)]).string("value") == "010203")
        #expect(try await phone.expect("read", ["handle": running.longHandle]).bytes("value") == Self.longValue)

        try await phone.expectEveryKindOfWriteReadBack(running.writableHandle)

        // Notifications and confirmed indications.
        let notify = try #require(running.published.characteristic(Self.notifyUUID))
        let indicate = try #require(running.published.characteristic(Self.indicateUUID))
        try await phone.expect("subscribe", ["handle": Int(notify.valueHandle)])
        try await phone.expect("subscribe", ["handle": Int(indicate.valueHandle), "indicate": true])
        #expect(try await running.peripheral.updateValue([0xAA, 0x01], for: notify))
        #expect(try await running.peripheral.updateValue([0xBB, 0x01], for: indicate))
        #expect(try await running.peripheral.updateValue([0xBB, 0x02], for: indicate))
        let received = try await phone.expect("notifications", ["count": 3])
        let values = (received["values"] as? [[String: Any]] ?? []).compactMap { $0["value"] as? String }
        #expect(values.sorted() == ["aa01", "bb01", "bb02"])

        // Disconnecting unsubscribes the central from both, each an event.
        try await phone.expect("disconnect")
        _ = try await running.events.next { if case .centralDisconnected = $0 { true } else { false } }
        let unsubscribed = running.events.all.compactMap { event -> PublishedCharacteristic? in
            if case .unsubscribed(_, let characteristic) = event { characteristic } else { nil }
        }
        #expect(Set(unsubscribed) == [notify, indicate])
    }

    /// While it runs the host is reached strongly (its server's link, its transport's receiver);
    /// once `run` has returned, nothing keeps it: a host stopped with a phone connected is freed.
    @Test func aStoppedHostIsFreed() async throws {
        weak var stoppedHost: PeripheralHost?
        do {
            let running = try await Self.start()
            defer { running.controller.stop() }
            stoppedHost = running.host
            _ = try await running.connectedPhone()
            running.task.cancel()
            await running.task.value
        }
        // Tasks the host started end on their own once cancelled.
        #expect(await eventually { stoppedHost == nil })
    }

    @Test func eightPhonesEachWithItsOwnMTUAndSubscriptionsOneKilledMidPreparedWrite() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let notify = try #require(running.published.characteristic(Self.notifyUUID))
        var phones: [Phone] = []
        for index in 0..<8 {
            let phone = try await running.connectedPhone(mtu: 23 + 10 * index)
            try await phone.expect("discover")
            if index % 2 == 0 { try await phone.expect("subscribe", ["handle": Int(notify.valueHandle)]) }
            phones.append(phone)
        }
        #expect(await running.peripheral.connectedCentrals.count == 8)
        var lengths: [Int] = []
        for central in await running.peripheral.connectedCentrals {
            lengths.append(await running.peripheral.maximumUpdateValueLength(for: central) ?? 0)
        }
        #expect(lengths.sorted() == (0..<8).map { 20 + 10 * $0 })

        // Phone 3 queues part of a prepared write and is killed before executing it.
        try await phones[3].expect("prepare", ["handle": running.writableHandle, "offset": 0, "value": "0102"])
        phones[3].kill()
        _ = try await running.events.next { if case .centralDisconnected = $0 { true } else { false } }

        // The others are undisturbed: a value longer than every MTU reaches each subscriber
        // truncated to its own maximum, and a full prepared write from another phone works.
        let value = (0..<100).map { UInt8($0) }
        #expect(try await running.peripheral.updateValue(value, for: notify))
        for (index, phone) in phones.enumerated() where index % 2 == 0 {
            let got = try await phone.expect("notifications", ["count": 1])
            let first = (got["values"] as? [[String: Any]])?.first?["value"] as? String
            #expect(first.flatMap { [UInt8](hexString: $0) } == Array(value.prefix(20 + 10 * index)))
        }
        try await phones[5].expect("prepare", ["handle": running.writableHandle, "offset": 0, "value": "0a0b"])
        try await phones[5].expect("prepare", ["handle": running.writableHandle, "offset": 2, "value": "0c"])
        try await phones[5].expect("execute", ["commit": true])
        for index in [0, 1, 2, 4, 5, 6, 7] {
            #expect(try await phones[index].expect("read", ["handle": running.writableHandle]).string("value") == "0a0b0c")
        }
    }

    @Test func fullTransmitQueueRefusesThenReportsReady() async throws {
        let running = try await Self.start(capacity: 2)
        defer { running.stop() }
        let notify = try #require(running.published.characteristic(Self.notifyUUID))
        let phone = try await running.connectedPhone(mtu: 517)
        try await phone.expect("discover")
        try await phone.expect("subscribe", ["handle": Int(notify.valueHandle)])
        let sent = try await running.peripheral.updateUntilRefused(notify, limit: 3)
        // Without a refusal no ready event is owed: stop here rather than wait for it.
        guard sent == 2 else {
            Issue.record("the host granted only 2 credits, yet \(sent) updates were accepted")
            return
        }
        _ = try await running.events.next { $0 == .readyToUpdateSubscribers }
        #expect(try await running.peripheral.updateValue([0xFF], for: notify))
        let got = try await phone.expect("notifications", ["count": sent + 1])
        #expect((got["values"] as? [Any])?.count == sent + 1)
    }

    @Test func recoversWhenTheControllerIsDroppedAndANewPhoneReads() async throws {
        let first = try await VirtualController()
        let running = try await Self.start(controller: first)
        defer { running.stop() }
        let port = first.tcpPort
        let phone = try await running.connectedPhone()
        first.stop()
        phone.kill()
        _ = try await running.events.next { $0 == .stateChanged(.resetting) }
        let second = try await VirtualController(port: port)
        defer { second.stop() }
        _ = try await running.events.next { $0 == .stateChanged(.poweredOn) }
        let restarted = Running(
            controller: second, host: running.host, peripheral: running.peripheral, events: running.events,
            published: running.published, task: running.task)
        let newPhone = try await restarted.connectedPhone(mtu: 517)
        #expect(try await newPhone.expect("read", ["handle": running.longHandle]).bytes("value") == Self.longValue)
    }
}

extension Peripheral {
    /// Updates `characteristic` until the transmit queue refuses, within one job on the peripheral's
    /// executor: no completed packet can free room between two updates.
    func updateUntilRefused(_ characteristic: PublishedCharacteristic, limit: Int) throws -> Int {
        var sent = 0
        while sent < limit, try updateValue([UInt8(sent)], for: characteristic) { sent += 1 }
        return sent
    }
}
