import BluetoothCore
import BluetoothHCI
import EventLoop
import Foundation
import Logging
import StateFile
import TestHarness
import Testing

@testable import BluetoothHost

/// The host against a real, independent central: Bumble phones on the virtual controller
/// (Tests/harness). These need Python with Bumble and fail with a clear message without it.
@Suite(.serialized, .timeLimit(.minutes(2)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct HostEndToEndTests {
    static let service = BluetoothUUID("50DB505C-8AC4-4738-8448-3B1D9CC09CC5")!

    struct Running {
        let controller: VirtualController
        let host: PeripheralHost
        let server: RecordingServer
        /// The host's events, from its start.
        let events: EventLog<HostEvent>
        let task: Task<Void, Never>

        func stop() {
            task.cancel()
            controller.stop()
        }
    }

    static func start(
        name: String = "gattway-e2e", maxCentrals: Int = 8,
        controller: VirtualController? = nil
    ) async throws -> Running {
        let virtual = if let controller { controller } else { try await VirtualController() }
        // Unbuffered on stderr, so a failing run shows what the host did.
        var logger = Logger(label: "host-e2e", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .info
        let configuration = HostConfiguration(
            transport: .tcp(host: "127.0.0.1", port: UInt16(virtual.tcpPort)),
            stateDirectory: try temporaryDirectory("e2e").path,
            advertising: AdvertisingSettings(localName: name, serviceUUIDs: [service], intervalMilliseconds: 20),
            maxCentrals: maxCentrals, reconnectDelays: [.milliseconds(100), .milliseconds(300)])
        let server = RecordingServer()
        let host = PeripheralHost(
            configuration: configuration, server: server, stateWriter: StateFileWriter(), logger: logger)
        let events = EventLog<HostEvent>()
        await host.setEventSink(events.append)
        let task = Task(executorPreference: EventLoop.shared) { await host.run() }
        _ = await server.events.first { $0 == .state(.poweredOn) }
        return Running(controller: virtual, host: host, server: server, events: events, task: task)
    }

    @Test func phoneFindsNameAndServiceUUIDAndConnects() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let phone = try await Phone(controllerPort: running.controller.tcpPort)
        let found = try await phone.expect("scan", ["name": "gattway-e2e"])
        let uuids = found["uuids"] as? [String] ?? []
        #expect(uuids.contains { BluetoothUUID($0) == Self.service })
        let payload = AdvertisingPayload(
            settings: AdvertisingSettings(
                localName: "gattway-e2e",
                serviceUUIDs: [Self.service]),
            txPower: nil)
        #expect(found.bytes("adv_data") == payload.advertisingData)

        let address = try #require(found.string("address"))
        try await phone.expect("connect", ["address": address])
        let connected = try await running.events.next { if case .connected = $0 { true } else { false } }
        guard case .connected(let central) = connected else {
            Issue.record("the host saw no connection")
            return
        }
        #expect(await running.host.connectedCentrals == [central])

        // ATT over ACL both ways (27-byte fragments, credits): the test server answers MTU 517.
        #expect(try await phone.expect("mtu", ["mtu": 517]).int("mtu") == 517)

        try await phone.expect("disconnect")
        let disconnected = try await running.events.next { if case .disconnected = $0 { true } else { false } }
        #expect(disconnected == .disconnected(central, reason: .remoteUserTerminated))
        // Advertising again: a phone finds it after the disconnection.
        try await phone.expect("scan", ["name": "gattway-e2e"])
    }

    @Test func longNameReachesThePhoneInTheScanResponse() async throws {
        let name = "gattway greenhouse 7"
        let running = try await Self.start(name: name)
        defer { running.stop() }
        let phone = try await Phone(controllerPort: running.controller.tcpPort)
        let found = try await phone.expect("scan", ["name": name])
        #expect(found.string("scan_response")?.isEmpty == false)
    }

    @Test func signalingAndPairingAreAnswered() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let phone = try await Phone(controllerPort: running.controller.tcpPort)
        let address = try #require(try await phone.expect("scan", ["name": "gattway-e2e"]).string("address"))
        try await phone.expect("connect", ["address": address])
        // An Echo Request (0x08) is BR/EDR-only: Command Reject, "command not understood".
        let reject = try await phone.expect("signal", ["hex": "0811020001ff"])
        #expect(reject["replies"] as? [String] == ["011102000000"])
        // A legacy Pairing Request (no Secure Connections bit) while legacy pairing is off:
        // Pairing Failed, Authentication Requirements.
        let refused = try await phone.expect("smp", ["hex": "01030001100707"])
        #expect(refused["replies"] as? [String] == ["0503"])
        // The latency wish becomes a Connection Parameter Update Request the phone answers.
        let central = try #require(await running.host.connectedCentrals.first)
        try await running.host.setDesiredConnectionLatency(.high, for: central)
        let answer = try await running.events.next {
            if case .connectionParameterUpdateAnswered = $0 { true } else { false }
        }
        #expect(answer == .connectionParameterUpdateAnswered(central, accepted: true))
    }

    @Test func eightPhonesAtOnceThenAdvertisingStops() async throws {
        let running = try await Self.start(maxCentrals: 8)
        defer { running.stop() }
        var phones: [Phone] = []
        for _ in 0..<8 {
            let phone = try await Phone(controllerPort: running.controller.tcpPort)
            let address = try #require(try await phone.expect("scan", ["name": "gattway-e2e"]).string("address"))
            try await phone.expect("connect", ["address": address])
            phones.append(phone)
        }
        for phone in phones {
            #expect(try await phone.expect("mtu", ["mtu": 517]).int("mtu") == 517)
        }
        #expect(await running.host.connectedCentrals.count == 8)
        #expect(await running.host.isAdvertising == false)
        let ninth = try await Phone(controllerPort: running.controller.tcpPort)
        #expect(try await ninth.run("scan", ["name": "gattway-e2e", "timeout": 1]).ok == false)
        phones[3].kill()
        _ = try await running.events.next { if case .disconnected = $0 { true } else { false } }
        #expect(await running.host.connectedCentrals.count == 7)
        try await ninth.expect("scan", ["name": "gattway-e2e"])
        #expect(!running.controller.log.contains("credit violation:"))
    }

    @Test func overAUnixSocketWithAStaticRandomAddress() async throws {
        let path = NSTemporaryDirectory() + "gattway-vc-\(UUID().uuidString.prefix(8)).sock"
        let controller = try await VirtualController(extraArguments: ["--unix", path, "--zero-public-address"])
        defer { controller.stop() }
        let server = RecordingServer()
        let host = PeripheralHost(
            configuration: HostConfiguration(
                transport: .unix(path: path),
                stateDirectory: try temporaryDirectory("e2e").path,
                advertising: AdvertisingSettings(localName: "gattway-unix", intervalMilliseconds: 20)),
            server: server, stateWriter: StateFileWriter(),
            logger: Logger(label: "host-e2e", factory: { StreamLogHandler.standardError(label: $0) }))
        let task = Task(executorPreference: EventLoop.shared) { await host.run() }
        defer { task.cancel() }
        _ = await server.events.first { $0 == .state(.poweredOn) }
        let address = try #require(await host.controller?.address)
        #expect(address.isStaticRandom)

        let phone = try await Phone(controllerPort: controller.tcpPort)
        let found = try await phone.expect("scan", ["name": "gattway-unix"])
        #expect(found.string("address") == address.description)
        try await phone.expect("connect", ["address": address.description])
        #expect(try await phone.expect("mtu", ["mtu": 517]).int("mtu") == 517)
    }

    @Test func recoversWhenTheVirtualControllerRestarts() async throws {
        let first = try await VirtualController()
        let running = try await Self.start(controller: first)
        defer { running.stop() }
        let port = first.tcpPort
        first.stop()
        _ = await running.server.events.first { $0 == .state(.resetting) }
        let second = try await VirtualController(port: port)
        defer { second.stop() }
        _ = await running.server.events.first { $0 == .state(.poweredOn) }
        let phone = try await Phone(controllerPort: port)
        let address = try #require(try await phone.expect("scan", ["name": "gattway-e2e"]).string("address"))
        try await phone.expect("connect", ["address": address])
        #expect(try await phone.expect("mtu", ["mtu": 517]).int("mtu") == 517)
    }
}
