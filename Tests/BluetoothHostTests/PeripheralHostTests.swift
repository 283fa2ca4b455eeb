import BluetoothATT
import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import EventLoop
import Foundation
import Logging
import StateFile
import TestHarness
import Testing

import struct BluetoothSMP.SecurityConfiguration

@testable import BluetoothHost

/// What the host told the ATT server, in order.
enum ServerEvent: Equatable, Sendable {
    case state(PeripheralState)
    case connected(Central)
    case disconnected(Central)
    case pdu([UInt8], Central)
    case credits(Int)
    case security(LinkSecurity, Central)
    case restored([UInt16: UInt16], Central, databaseChanged: Bool)
}

/// An ATT server that records the host's calls and answers an Exchange MTU Request with 517.
/// Its methods are synchronous, as `GATTPeripheralBinding`'s are: they run on the host's loop.
final class RecordingServer: ATTServer, @unchecked Sendable {
    let events: AsyncStream<ServerEvent>
    private let continuation: AsyncStream<ServerEvent>.Continuation
    private let lock = NSLock()
    private var bearers: [Central: ATTBearer] = [:]
    private var cccds: [Central: [UInt16: UInt16]] = [:]
    private var hash: [UInt8] = Array(repeating: 0xAB, count: 16)
    private var awaitsServiceChanged = false
    private var features: UInt8 = 0
    private var restoredFeatures: UInt8 = 0

    init() { (events, continuation) = AsyncStream.makeStream(of: ServerEvent.self) }

    func bearer(for central: Central) -> ATTBearer? { lock.withLock { bearers[central] } }

    func hostStateChanged(_ state: PeripheralState) { continuation.yield(.state(state)) }
    func centralConnected(_ bearer: ATTBearer) {
        lock.withLock { bearers[bearer.central] = bearer }
        continuation.yield(.connected(bearer.central))
    }
    func centralDisconnected(_ central: Central) {
        _ = lock.withLock { bearers.removeValue(forKey: central) }
        continuation.yield(.disconnected(central))
    }
    func received(_ pdu: [UInt8], from central: Central) {
        continuation.yield(.pdu(pdu, central))
        if pdu.first == 0x02 { bearer(for: central)?.send([0x03, 0x05, 0x02]) }
    }
    func transmitCreditsAvailable(_ count: Int) { continuation.yield(.credits(count)) }
    func securityChanged(_ security: LinkSecurity, for central: Central) {
        continuation.yield(.security(security, central))
    }
    func restoreSubscriptions(
        _ clientConfigurations: [UInt16: UInt16], clientSupportedFeatures: UInt8, for central: Central,
        databaseChanged: Bool
    ) {
        lock.withLock { restoredFeatures = clientSupportedFeatures }
        continuation.yield(.restored(clientConfigurations, central, databaseChanged: databaseChanged))
    }
    /// The Client Supported Features the last restore carried.
    var lastRestoredFeatures: UInt8 { lock.withLock { restoredFeatures } }
    func clientSupportedFeatures(of central: Central) -> UInt8 { lock.withLock { features } }
    /// What `clientSupportedFeatures(of:)` answers, for every central.
    func setClientSupportedFeatures(_ value: UInt8) { lock.withLock { features = value } }
    func databaseHash() -> [UInt8] { lock.withLock { hash } }
    /// What `databaseHash()` answers.
    func setDatabaseHash(_ value: [UInt8]) { lock.withLock { hash = value } }
    func awaitsServiceChangedConfirmation(_ central: Central) -> Bool {
        lock.withLock { awaitsServiceChanged }
    }
    /// What `awaitsServiceChangedConfirmation(_:)` answers, for every central.
    func setAwaitsServiceChangedConfirmation(_ value: Bool) { lock.withLock { awaitsServiceChanged = value } }
    func clientConfigurations(of central: Central) -> [UInt16: UInt16] {
        lock.withLock { cccds[central] ?? [:] }
    }
    /// What `clientConfigurations(of:)` answers, as a GATT server would after CCCD writes.
    func setClientConfigurations(_ values: [UInt16: UInt16], for central: Central) {
        lock.withLock { cccds[central] = values }
    }
}

/// Host tests against `FakeController`: deterministic, no sockets.
@Suite(.timeLimit(.minutes(1)))
struct PeripheralHostTests {
    static let phone = BluetoothAddress("D0:11:22:33:44:55", kind: .random)!
    static let settings = AdvertisingSettings(
        localName: "gattway", serviceUUIDs: [BluetoothUUID("50DB505C-8AC4-4738-8448-3B1D9CC09CC5")!])

    struct Rig {
        let host: PeripheralHost
        let server: RecordingServer
        /// The host's events, from its start.
        let events: EventLog<HostEvent>
        let controllers: [FakeController]
        let task: Task<Void, Never>
        let stateDirectory: String
        /// Writes the host's bond file; a test waits for it (`idle`) before it reads the file.
        let writer: StateFileWriter
    }

    static func start(
        _ controllers: [FakeController], maxCentrals: Int = 8, queueCapacity: Int = 8,
        commandTimeout: Duration = .seconds(2), stateDirectory: String? = nil,
        security: SecurityConfiguration = .standard
    ) throws -> Rig {
        let directory = try stateDirectory ?? temporaryDirectory("host").path
        let configuration = HostConfiguration(
            transport: .tcp(host: "fake", port: 1), stateDirectory: directory, advertising: settings,
            maxCentrals: maxCentrals, transmitQueueCapacity: queueCapacity, commandTimeout: commandTimeout,
            reconnectDelays: [.milliseconds(10)], security: security)
        let server = RecordingServer()
        let remaining = NSLock()
        nonisolated(unsafe) var queue = controllers
        let writer = StateFileWriter()
        let host = PeripheralHost(
            configuration: configuration, server: server, stateWriter: writer,
            logger: Logger(label: "test")
        ) { _ in
            try remaining.withLock {
                guard !queue.isEmpty else { throw HCITransportError(.unavailable, "no more fake controllers") }
                return queue.removeFirst()
            }
        }
        let events = EventLog<HostEvent>()
        let task = Task(executorPreference: EventLoop.shared) {
            await host.setEventSink(events.append)
            await host.run()
        }
        return Rig(
            host: host, server: server, events: events, controllers: controllers, task: task, stateDirectory: directory,
            writer: writer)
    }

    static func commands(_ controller: FakeController, until opcode: HCIOpcode) async -> [HCIOpcode] {
        var seen: [HCIOpcode] = []
        for await packet in controller.sent {
            if case .command(let command) = packet {
                seen.append(command.opcode)
                if command.opcode == opcode { break }
            }
        }
        return seen
    }

    /// The next `count` commands the host sends.
    static func next(_ controller: FakeController, _ count: Int) async -> [HCICommand] {
        var commands: [HCICommand] = []
        for await packet in controller.sent {
            if case .command(let command) = packet { commands.append(command) }
            if commands.count == count { break }
        }
        return commands
    }

    /// Connects a central on `handle`; the bearer the server was handed for it.
    static func connectedBearer(_ rig: Rig, _ controller: FakeController, handle: UInt16) async -> ATTBearer? {
        controller.connect(handle: handle, peer: phone)
        guard
            case .connected(let central) = await rig.server.events.first(matching: {
                if case .connected = $0 { true } else { false }
            })
        else { return nil }
        return rig.server.bearer(for: central)
    }

    static func acl(_ controller: FakeController, count: Int) async -> [HCIACLPacket] {
        var packets: [HCIACLPacket] = []
        for await packet in controller.sent {
            if case .acl(let acl) = packet { packets.append(acl) }
            if packets.count == count { break }
        }
        return packets
    }

    @Test func bringsUpThenAdvertises() async throws {
        let controller = FakeController()
        let rig = try Self.start([controller])
        defer { rig.task.cancel() }
        let opcodes = await Self.commands(controller, until: .leSetAdvertisingEnable)
        #expect(
            opcodes == [
                .reset, .readLocalVersion, .readLocalSupportedCommands, .leReadLocalSupportedFeatures,
                .readBDADDR, .leReadBufferSize, .setEventMask, .leSetEventMask,
                .leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData,
                .leSetAdvertisingEnable
            ])
        let started = try await rig.events.next { if case .advertisingStarted = $0 { true } else { false } }
        guard case .advertisingStarted(let payload, let extended) = started else {
            Issue.record("advertising did not start")
            return
        }
        #expect(!extended)
        #expect(payload.advertisingData.count == 30)
        #expect(await rig.host.state == .poweredOn)
        #expect(await rig.host.controller?.address == BluetoothAddress("F0:00:00:00:00:01")!)
    }

    @Test func extendedAdvertisingWhenTheControllerHasIt() async throws {
        let controller = FakeController(
            publicAddress: .zero, leFeatures: 1 << 12,
            supportsExtendedAdvertising: true)
        let rig = try Self.start([controller])
        defer { rig.task.cancel() }
        let opcodes = await Self.commands(controller, until: .leSetExtendedAdvertisingEnable)
        #expect(
            Array(opcodes.suffix(5)) == [
                .leSetExtendedAdvertisingParameters, .leSetAdvertisingSetRandomAddress,
                .leSetExtendedAdvertisingData, .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable
            ])
        #expect(!opcodes.contains(.leSetRandomAddress))
        controller.connect(handle: 0x40, peer: Self.phone)
        controller.inject(
            .event(
                .le(
                    .advertisingSetTerminated(
                        status: .success, advertisingHandle: 0,
                        connectionHandle: 0x40, completedEvents: 0))))
        // The set stopped with the connection; the host enables it again (1 of 8 connected).
        #expect(
            await Self.commands(controller, until: .leSetExtendedAdvertisingEnable)
                == [.leSetExtendedAdvertisingEnable])
    }

    @Test func usesAStoredStaticRandomAddressWithoutAPublicOne() async throws {
        let controller = FakeController(publicAddress: .zero)
        let rig = try Self.start([controller])
        defer { rig.task.cancel() }
        var random: BluetoothAddress?
        for await packet in controller.sent {
            if case .command(let command) = packet, command.opcode == .leSetRandomAddress {
                random = BluetoothAddress(littleEndianBytes: command.parameters, kind: .random)
                break
            }
        }
        let address = try #require(random)
        #expect(address.isStaticRandom)
        let stored = try String(contentsOfFile: rig.stateDirectory + "/static-random-address", encoding: .utf8)
        #expect(stored == address.description + "\n")
    }

    @Test func connectionFlowsThroughL2CAPWithCredits() async throws {
        let controller = FakeController(buffers: ACLBufferSize(dataLength: 4, packetCount: 2))
        let rig = try Self.start([controller])
        defer { rig.task.cancel() }
        _ = await Self.commands(controller, until: .leSetAdvertisingEnable)
        controller.connect(handle: 0x40, peer: Self.phone)
        guard
            case .connected(let central) = await rig.server.events.first(matching: {
                if case .connected = $0 { true } else { false }
            })
        else {
            Issue.record("no connection")
            return
        }
        #expect(central.address == Self.phone)
        // After a connection the host re-enables advertising and asks for DLE and 2M PHY.
        let followUps = await Self.commands(controller, until: .leSetPHY)
        #expect(followUps.suffix(3) == [.leSetAdvertisingEnable, .leSetDataLength, .leSetPHY])

        controller.receive(L2CAPChannel.att, [0x02, 0x05, 0x02], on: 0x40)
        #expect(
            await rig.server.events.first { if case .pdu = $0 { true } else { false } }
                == .pdu([0x02, 0x05, 0x02], central))
        // The 7-byte frame [03 00 04 00 03 05 02] needs two 4-byte buffers: both go out at once.
        let fragments = await Self.acl(controller, count: 2)
        #expect(fragments.flatMap(\.data) == [0x03, 0x00, 0x04, 0x00, 0x03, 0x05, 0x02])
        #expect(fragments.map(\.boundary) == [.firstNonFlushable, .continuing])
    }

    @Test(.onTheLoop) func creditsAreGrantedOnceThenReturnedAsUpdatesLeave() async throws {
        let controller = FakeController(buffers: ACLBufferSize(dataLength: 27, packetCount: 1))
        let rig = try Self.start([controller], queueCapacity: 5)
        defer { rig.task.cancel() }
        #expect(await rig.server.events.first { if case .credits = $0 { true } else { false } } == .credits(5))
        guard let bearer = await Self.connectedBearer(rig, controller, handle: 0x41) else {
            Issue.record("no connection")
            return
        }
        let notification = ATTUpdate(.notification, handle: 0x0010, value: [0x01])
        bearer.sendUpdate(notification)
        bearer.sendUpdate(notification)
        bearer.sendUpdate(notification)
        _ = await Self.acl(controller, count: 1)  // one buffer: one goes out, two wait
        controller.complete(1, on: 0x41)
        #expect(await rig.server.events.first { if case .credits = $0 { true } else { false } } == .credits(1))
        // The two still queued come back when the central goes.
        controller.inject(.event(.disconnectionComplete(status: .success, handle: 0x41, reason: .remoteUserTerminated)))
        _ = await rig.server.events.first { if case .disconnected = $0 { true } else { false } }
        #expect(await rig.server.events.first { if case .credits = $0 { true } else { false } } == .credits(2))
    }

    /// An update's opcode and handle go out before its value array itself, cut wherever the
    /// controller's buffers cut it; one waiting for a buffer keeps the value it was sent with
    /// when the caller's array changes meanwhile.
    @Test(.onTheLoop) func queuedUpdatesGoOutWithTheValuesTheyWereSentWith() async throws {
        let controller = FakeController(buffers: ACLBufferSize(dataLength: 5, packetCount: 1))
        let rig = try Self.start([controller], queueCapacity: 5)
        defer { rig.task.cancel() }
        #expect(await rig.server.events.first { if case .credits = $0 { true } else { false } } == .credits(5))
        guard let bearer = await Self.connectedBearer(rig, controller, handle: 0x41) else {
            Issue.record("no connection")
            return
        }
        var value: [UInt8] = [0x01, 0x02]
        bearer.sendUpdate(ATTUpdate(.notification, handle: 0x0110, value: value))
        value[0] = 0x03
        bearer.sendUpdate(ATTUpdate(.indication, handle: 0x0110, value: value))
        value[0] = 0x05
        // Two 9-byte frames in 5-byte buffers, one at a time: four fragments, each sent once
        // the one before completes.
        var fragments: [HCIACLPacket] = []
        for _ in 0..<4 {
            fragments += await Self.acl(controller, count: 1)
            controller.complete(1, on: 0x41)
        }
        #expect(fragments.map(\.data.count) == [5, 4, 5, 4])
        #expect(
            fragments.flatMap(\.data) == [
                0x05, 0x00, 0x04, 0x00, 0x1B, 0x10, 0x01, 0x01, 0x02,
                0x05, 0x00, 0x04, 0x00, 0x1D, 0x10, 0x01, 0x03, 0x02
            ])
    }

    @Test func answersSignalingAndPairing() async throws {
        let controller = FakeController()
        let rig = try Self.start([controller])
        defer { rig.task.cancel() }
        _ = await Self.commands(controller, until: .leSetAdvertisingEnable)
        controller.connect(handle: 0x40, peer: Self.phone)
        _ = await rig.server.events.first { if case .connected = $0 { true } else { false } }
        controller.receive(L2CAPChannel.leSignaling, [0x0A, 0x05, 0x02, 0x00, 0x02, 0x00], on: 0x40)
        controller.receive(L2CAPChannel.securityManager, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07], on: 0x40)
        let replies = await Self.acl(controller, count: 2)
        #expect(replies[0].data == [0x06, 0x00, 0x05, 0x00, 0x01, 0x05, 0x02, 0x00, 0x00, 0x00])
        // A legacy Pairing Request while legacy pairing is off: Pairing Failed, Authentication
        // Requirements.
        #expect(replies[1].data == [0x02, 0x00, 0x06, 0x00, 0x05, 0x03])
    }

    @Test func anUnansweredCommandTimesOutAndTheHostGoesOn() async throws {
        let controller = FakeController(silentOpcodes: [.leSetPHY])
        // Every command has this timeout, so it is long enough that no answered command times
        // out on a loaded machine: at 200 ms, one of the setup commands did, and the host
        // reopened the controller instead of advertising.
        let timeout = Duration.seconds(1)
        let rig = try Self.start([controller], commandTimeout: timeout)
        defer { rig.task.cancel() }
        _ = await Self.commands(controller, until: .leSetAdvertisingEnable)
        controller.connect(handle: 0x40, peer: Self.phone)
        _ = await Self.commands(controller, until: .leSetPHY)
        // The re-advertising after this disconnection waits behind the silent LE Set PHY until
        // the command timeout gives up on it, then runs.
        controller.inject(.event(.disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminated)))
        let after = await Self.commands(controller, until: .leSetAdvertisingEnable)
        #expect(after == [.leSetAdvertisingEnable])
        let phySent = try #require(controller.sendTimes(of: .leSetPHY).last)
        let advertisingSent = try #require(controller.sendTimes(of: .leSetAdvertisingEnable).last)
        #expect(advertisingSent - phySent >= timeout)
    }

    @Test func stopsAdvertisingAtMaxCentralsAndResumesOnDisconnect() async throws {
        let controller = FakeController()
        let rig = try Self.start([controller], maxCentrals: 1)
        defer { rig.task.cancel() }
        _ = await Self.commands(controller, until: .leSetAdvertisingEnable)
        controller.connect(handle: 0x40, peer: Self.phone)
        let afterConnect = await Self.commands(controller, until: .leSetPHY)
        #expect(!afterConnect.contains(.leSetAdvertisingEnable))
        #expect(await rig.host.isAdvertising == false)
        controller.inject(.event(.disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminated)))
        #expect(await Self.commands(controller, until: .leSetAdvertisingEnable) == [.leSetAdvertisingEnable])
    }

    @Test func recoversFromALostController() async throws {
        let first = FakeController()
        let second = FakeController()
        let rig = try Self.start([first, second])
        defer { rig.task.cancel() }
        _ = await rig.server.events.first { $0 == .state(.poweredOn) }
        first.connect(handle: 0x40, peer: Self.phone)
        guard
            case .connected(let central) = await rig.server.events.first(matching: {
                if case .connected = $0 { true } else { false }
            })
        else {
            Issue.record("no connection")
            return
        }
        first.failLink()
        var sequence: [ServerEvent] = []
        for await event in rig.server.events {
            if case .pdu = event { continue }
            sequence.append(event)
            if event == .state(.poweredOn) { break }
        }
        #expect(sequence == [.disconnected(central), .state(.resetting), .state(.poweredOn)])
        #expect(await Self.commands(second, until: .leSetAdvertisingEnable).first == .reset)
    }

    @Test func anUnexpectedResetIsAControllerLoss() async throws {
        let first = FakeController()
        let second = FakeController()
        let rig = try Self.start([first, second])
        defer { rig.task.cancel() }
        #expect(await rig.server.events.first { $0 == .state(.poweredOn) } != nil)
        first.inject(.event(.commandComplete(numCommandPackets: 1, opcode: .reset, returnParameters: [0])))
        #expect(
            await rig.server.events.first { $0 == .state(.resetting) } != nil,
            "a Reset the host did not send means the controller was reset under it: the link is lost")
        #expect(
            await Self.commands(second, until: .leSetAdvertisingEnable).first == .reset,
            "the host brings up the next controller from a reset")
        #expect(await rig.server.events.first { $0 == .state(.poweredOn) } != nil, "and serves again")
    }

    @Test func advertisingCanBeChangedAndStopped() async throws {
        let controller = FakeController()
        let rig = try Self.start([controller])
        defer { rig.task.cancel() }
        _ = await Self.commands(controller, until: .leSetAdvertisingEnable)
        try await rig.host.startAdvertising(AdvertisingSettings(localName: "renamed"))
        let restart = await Self.next(controller, 5)
        #expect(
            restart.map(\.opcode) == [
                .leSetAdvertisingEnable, .leSetAdvertisingParameters,
                .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable
            ])
        #expect(restart.first?.parameters == [0] && restart.last?.parameters == [1])
        #expect(restart[2].parameters.starts(with: [12, 2, 1, 6, 8, 9] + Array("renamed".utf8)))
        try await rig.host.stopAdvertising()
        #expect(await Self.next(controller, 1) == [.leSetAdvertisingEnable(false)])
        #expect(await rig.host.isAdvertising == false)
        // Stopped stays stopped: neither a connection nor a disconnection brings it back.
        controller.connect(handle: 0x40, peer: Self.phone)
        controller.inject(.event(.disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminated)))
        _ = await rig.server.events.first { if case .disconnected = $0 { true } else { false } }
        #expect(await Self.commands(controller, until: .leSetPHY) == [.leSetDataLength, .leSetPHY])
    }

    @Test func openFailuresMapToStates() {
        #expect(PeripheralHost.state(after: HCITransportError(.permissionDenied, "")) == .unauthorized)
        #expect(PeripheralHost.state(after: HCITransportError(.rfkillBlocked, "")) == .poweredOff)
        #expect(PeripheralHost.state(after: HCITransportError(.notFound, "")) == .unsupported)
        #expect(PeripheralHost.state(after: HCITransportError(.busy, "")) == .resetting)
    }

    @Test func commandsAreRefusedBelowPoweredOn() async throws {
        let rig = try Self.start([])
        defer { rig.task.cancel() }
        await #expect(throws: HostError.self) { try await rig.host.startAdvertising(Self.settings) }
    }
}
