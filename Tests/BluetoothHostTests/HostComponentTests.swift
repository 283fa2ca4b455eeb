import BluetoothCore
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP
import EventLoop
import Logging
import StateFile
import Synchronization
import TestHarness
import Testing

@testable import BluetoothHost

/// A controller that records the commands and ACL data it is sent and, when told to, answers each
/// command with a Command Complete on the loop's next turn, as a controller's event would arrive.
final class CommandRecorder: HCITransport, @unchecked Sendable {
    let spec = HCITransportSpec.tcp(host: "recorder", port: 1)
    func start(receive: @escaping @Sendable (HCIPacket) -> Void, ended: @escaping @Sendable (HCITransportError?) -> Void) {}
    private let state = Mutex<(sent: [HCICommand], acl: [HCIACLPacket], answer: (@Sendable (HCIOpcode) -> Void)?)>(
        ([], [], nil))

    var sent: [HCIOpcode] { state.withLock { $0.sent.map(\.opcode) } }
    var commands: [HCICommand] { state.withLock { $0.sent } }
    var aclSent: [HCIACLPacket] { state.withLock { $0.acl } }

    func answer(with reply: @escaping @Sendable (HCIOpcode) -> Void) { state.withLock { $0.answer = reply } }

    func send(_ packet: HCIPacket) throws(HCITransportError) {
        if case .acl(let acl) = packet { state.withLock { $0.acl.append(acl) } }
        guard case .command(let command) = packet else { return }
        let reply = state.withLock {
            $0.sent.append(command)
            return $0.answer
        }
        if let reply { EventLoop.shared.execute { reply(command.opcode) } }
    }

    func close() {}
}

/// Owns a command channel and an advertiser on the event loop, as `PeripheralHost` does.
actor HostComponentBench {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    let transport = CommandRecorder()
    let channel: HCICommandChannel
    let advertiser: Advertiser
    nonisolated let events = EventLog<HostEvent>()

    /// `timeout`: far beyond any wait of a test that does not test it, so a machine loaded by the
    /// whole suite (the test's own steps starved for seconds) cannot time a command out under it.
    init(timeout: Duration = .seconds(60), settings: AdvertisingSettings? = nil, maxCentrals: Int = 1) {
        channel = HCICommandChannel(timeout: timeout)
        advertiser = Advertiser(
            settings: settings, commands: channel, maxCentrals: maxCentrals, eventSink: HostEventOutlet(events.append),
            logger: Logger(label: "test"))
    }

    /// `replies`: each command's return parameters (status, then body); success with no body for
    /// any other.
    func open(answering: Bool, replies: [HCIOpcode: [UInt8]] = [:]) {
        channel.open(transport)
        guard answering else { return }
        transport.answer { [weak self] opcode in
            self?.onLoop(with: opcode) { bench, opcode in
                _ = bench.channel.commandComplete(opcode, returnParameters: replies[opcode] ?? [0x00])
            }
        }
    }

    func execute(_ command: HCICommand) async throws -> HCICommandResult { try await channel.execute(command) }
    func complete(_ opcode: HCIOpcode, _ parameters: [UInt8]) -> Bool {
        channel.commandComplete(opcode, returnParameters: parameters)
    }
    func status(_ opcode: HCIOpcode, _ status: HCIStatus) -> Bool { channel.commandStatus(opcode, status: status) }
    func close() { channel.close() }

    func bringUp(stateDirectory: String, readTxPower: Bool) async throws -> ControllerInfo? {
        try await ControllerBringUp.run(
            on: channel, stateDirectory: stateDirectory, stateWriter: StateFileWriter(), readTxPower: readTxPower,
            logger: Logger(label: "test"))
    }

    func startAdvertising(_ settings: AdvertisingSettings, on info: ControllerInfo, connected: Int) async throws {
        try await advertiser.start(settings, on: info, connected: connected)
    }
    func enableAdvertising(on info: ControllerInfo, connected: Int) async throws {
        try await advertiser.enable(on: info, connected: connected)
    }
    func updateAdvertising(_ settings: AdvertisingSettings, on info: ControllerInfo) async throws {
        try await advertiser.update(settings, on: info)
    }
    func advertisingStopped() { advertiser.markStopped() }
    var isAdvertising: Bool { advertiser.isAdvertising }
}

@Suite(.timeLimit(.minutes(1))) struct HCICommandChannelTests {
    @Test func commandsGoOneAtATimeAndOnlyTheirOwnAnswerResolvesThem() async throws {
        let bench = HostComponentBench()
        await bench.open(answering: false)
        let first = Task { try await bench.execute(.reset) }
        #expect(await eventually { bench.transport.sent == [.reset] })
        let second = Task { try await bench.execute(.readLocalVersion) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(bench.transport.sent == [.reset], "the second command waits for the slot")

        #expect(await bench.complete(.readLocalVersion, [0x00]) == false, "no such command in flight")
        #expect(await bench.complete(.reset, [0x00]) == true)
        #expect(try await first.value.status == .success)
        #expect(await eventually { bench.transport.sent == [.reset, .readLocalVersion] })
        #expect(await bench.status(.readLocalVersion, .unknownCommand) == true)
        #expect(try await second.value.status == .unknownCommand)
        #expect(await bench.status(.readLocalVersion, .success) == false, "answered once")
    }

    @Test func anUnansweredCommandFailsAfterTheTimeout() async throws {
        let bench = HostComponentBench(timeout: .milliseconds(50))
        await bench.open(answering: false)
        await #expect(throws: HostError("\(HCIOpcode.reset) not answered within 0.05 seconds")) {
            try await bench.execute(.reset)
        }
    }

    @Test func closingFailsTheCommandInFlightAndLaterOnes() async throws {
        let bench = HostComponentBench()
        await bench.open(answering: false)
        let inFlight = Task { try await bench.execute(.reset) }
        #expect(await eventually { bench.transport.sent == [.reset] })
        await bench.close()
        await #expect(throws: HostError("the controller was lost")) { try await inFlight.value }
        await #expect(throws: HostError("no controller")) { try await bench.execute(.reset) }
    }
}

@Suite(.timeLimit(.minutes(1))) struct AdvertiserTests {
    static let info = ControllerInfo(
        version: try! LocalVersion(body: [0x0D, 0x00, 0x00, 0x0D, 0xFF, 0xFF, 0x00, 0x00]),
        publicAddress: BluetoothAddress("F0:00:00:00:00:01")!, address: BluetoothAddress("F0:00:00:00:00:01")!,
        commands: try! SupportedCommands(body: [UInt8](repeating: 0, count: 64)),
        leFeatures: try! LEFeatures(body: [UInt8](repeating: 0, count: 8)),
        buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
    static let settings = AdvertisingSettings(localName: "gattway")

    @Test func startsLegacyAdvertisingAndReportsStartAndStopOnce() async throws {
        let bench = HostComponentBench(maxCentrals: 1)
        await bench.open(answering: true)
        try await bench.startAdvertising(Self.settings, on: Self.info, connected: 0)
        #expect(
            bench.transport.sent == [
                .leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData, .leSetAdvertisingEnable
            ])
        #expect(await bench.isAdvertising)
        await bench.advertisingStopped()
        await bench.advertisingStopped()
        #expect(await bench.isAdvertising == false)

        // Each event reached the sink in the call that made it; only one stop.
        let payload = AdvertisingPayload(settings: Self.settings, txPower: nil)
        #expect(bench.events.all == [.advertisingStarted(payload, extended: false), .advertisingStopped])
        try await bench.enableAdvertising(on: Self.info, connected: 0)
        #expect(bench.events.all.last == .advertisingStarted(payload, extended: false))
        #expect(bench.events.all.count == 3)
    }

    @Test func doesNotAdvertiseWithMaxCentralsConnected() async throws {
        let bench = HostComponentBench(maxCentrals: 2)
        await bench.open(answering: true)
        try await bench.startAdvertising(Self.settings, on: Self.info, connected: 2)
        #expect(bench.transport.sent == [.leSetAdvertisingParameters, .leSetAdvertisingData, .leSetScanResponseData])
        #expect(await bench.isAdvertising == false)
        try await bench.enableAdvertising(on: Self.info, connected: 1)
        #expect(bench.transport.sent.last == .leSetAdvertisingEnable)
        #expect(await bench.isAdvertising)
    }

    @Test func updatingSendsTheDataOnlyWhenItChanged() async throws {
        let bench = HostComponentBench()
        await bench.open(answering: true)
        await #expect(throws: HostError("not advertising: nothing to update (start advertising first)")) {
            try await bench.updateAdvertising(Self.settings, on: Self.info)
        }
        try await bench.startAdvertising(Self.settings, on: Self.info, connected: 0)
        let configured = bench.transport.sent.count
        try await bench.updateAdvertising(Self.settings, on: Self.info)
        #expect(bench.transport.sent.count == configured, "the same data is not sent again")
        try await bench.updateAdvertising(AdvertisingSettings(localName: "other"), on: Self.info)
        #expect(bench.transport.sent.dropFirst(configured) == [.leSetAdvertisingData, .leSetScanResponseData])
    }
}

@Suite(.timeLimit(.minutes(1)), .onTheLoop) struct ConnectionTableTests {
    let transport = CommandRecorder()
    let transmitter = LinkTransmitter()
    let events = EventLog<HostEvent>()
    let table: ConnectionTable
    /// 30–50 ms, no latency, 4 s supervision timeout.
    static let preferred = ConnectionParameters(intervalMin: 24, intervalMax: 40, latency: 0, supervisionTimeout: 400)

    init() {
        table = ConnectionTable(
            transmitter: transmitter, commands: HCICommandChannel(timeout: .seconds(1)),
            preferredParameters: Self.preferred, eventSink: HostEventOutlet(events.append), logger: Logger(label: "test"))
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
    }

    /// The LE signaling payloads sent on `handle` (single-fragment frames: header, then payload).
    func signalingSent(on handle: UInt16) -> [[UInt8]] {
        transport.aclSent.filter { $0.handle == handle && $0.data[2] == 0x05 && $0.data[3] == 0x00 }.map { Array($0.data.dropFirst(4)) }
    }

    @Test func centralsGetIncreasingConnectionIDsAndAreListedInConnectionOrder() {
        let peer = BluetoothAddress("C0:00:00:00:00:01")!
        let first = table.open(handle: 0x40, peer: peer)
        let second = table.open(handle: 0x41, peer: peer)
        #expect(table.remove(0x40) === first)
        let third = table.open(handle: 0x40, peer: peer)
        #expect([first, second, third].map(\.central.connectionID) == [1, 2, 3])
        #expect(table[0x40] === third)
        #expect(table.inOrder.map(\.central.connectionID) == [2, 3])
        #expect(table.removeAll().map(\.central.connectionID) == [2, 3])
        #expect(table.count == 0)
    }

    @Test func asksForThePreferredParametersOnlyWhenTheConnectionMissesThem() async {
        let peer = BluetoothAddress("C0:00:00:00:00:01")!
        let suiting = table.open(handle: 0x40, peer: peer)
        transmitter.open(0x40)
        table.askForPreferredParameters(suiting, interval: 30, latency: 0, supervisionTimeout: 400)
        #expect(signalingSent(on: 0x40).isEmpty)

        let missing = table.open(handle: 0x41, peer: peer)
        transmitter.open(0x41)
        table.askForPreferredParameters(missing, interval: 6, latency: 0, supervisionTimeout: 400)
        let requests = signalingSent(on: 0x41)
        // Connection Parameter Update Request (Vol 3 Part A 4.20): code 0x12, 8 bytes of parameters.
        #expect(requests.count == 1)
        let request = requests.first ?? []
        #expect(Array(request.prefix(1)) == [0x12])
        #expect(Array(request.dropFirst(4)) == [24, 0, 40, 0, 0, 0, 0x90, 0x01])

        // The central's answer (accepted) becomes an event, in the same call.
        let identifier = request.count > 1 ? request[1] : 0
        table.signalingReceived([0x13, identifier, 0x02, 0x00, 0x00, 0x00], from: missing)
        #expect(events.all == [.connectionParameterUpdateAnswered(missing.central, accepted: true)])
    }
}

@Suite(.timeLimit(.minutes(1))) struct SecurityCoordinatorTests {
    let directory: String
    let store: BondStore
    /// Writes the bond file; a test waits for it before it reads the file.
    let writer = StateFileWriter()
    let table: ConnectionTable
    let coordinator: SecurityCoordinator

    init() throws {
        (directory, store) = try HostSecurityTests.stateDirectoryWithBond()
        let transmitter = LinkTransmitter()
        let sink = HostEventOutlet()
        let logger = Logger(label: "test")
        table = ConnectionTable(
            transmitter: transmitter, commands: HCICommandChannel(timeout: .seconds(1)), preferredParameters: nil,
            eventSink: sink, logger: logger)
        coordinator = SecurityCoordinator(
            configuration: HostConfiguration(transport: .tcp(host: "fake", port: 1), stateDirectory: directory, advertising: nil),
            server: RecordingServer(), transmitter: transmitter, connections: table, eventSink: sink,
            stateWriter: writer, logger: logger)
    }

    @Test(.onTheLoop) func theBondsKeyAnswersItsCentralAndAnyOtherKeyGetsTheNegativeReply() async throws {
        let bonded = table.open(handle: 0x40, peer: HostSecurityTests.phone)
        coordinator.connectionOpened(bonded, local: BluetoothAddress("F0:00:00:00:00:01")!)
        #expect(
            coordinator.longTermKeyReply(to: bonded.central, rand: 0, ediv: 0)
                == .leLongTermKeyRequestReply(handle: 0x40, littleEndianKey: HostSecurityTests.key.littleEndianBytes))
        #expect(
            coordinator.longTermKeyReply(to: bonded.central, rand: 0x1122, ediv: 7)
                == .leLongTermKeyRequestNegativeReply(handle: 0x40))

        let stranger = table.open(handle: 0x41, peer: BluetoothAddress("D0:99:99:99:99:99", kind: .random)!)
        coordinator.connectionOpened(stranger, local: BluetoothAddress("F0:00:00:00:00:01")!)
        #expect(
            coordinator.longTermKeyReply(to: stranger.central, rand: 0, ediv: 0)
                == .leLongTermKeyRequestNegativeReply(handle: 0x41))
    }

    @Test func removingABondForgetsItInMemoryAndInTheFile() throws {
        #expect(coordinator.bonds.bonds.count == 1)
        #expect(coordinator.removeBond(HostSecurityTests.phone) == true)
        #expect(coordinator.removeBond(HostSecurityTests.phone) == false)
        #expect(coordinator.bonds.bonds.isEmpty)
        coordinator.saveBonds { #expect($0 == nil) }
        writer.waitUntilIdle()
        #expect(try store.load().bonds.isEmpty)
    }
}
