import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import Logging
import StateFile
import TestHarness
import Testing

@testable import BluetoothHost

/// `LinkDispatcher` with the real components around it, a recording controller and server: no
/// socket, each event handled as the host's reader hands it over.
@Suite(.timeLimit(.minutes(1)), .onTheLoop) struct LinkDispatcherTests {
    let transport = CommandRecorder()
    let transmitter = LinkTransmitter()
    let table: ConnectionTable
    let advertiser: Advertiser
    let server = RecordingServer()
    let events = EventLog<HostEvent>()
    let links: LinkDispatcher
    static let local = BluetoothAddress("F0:00:00:00:00:01")!
    static let peer = BluetoothAddress("D0:99:99:99:99:99", kind: .random)!

    init() throws {
        let sink = HostEventOutlet(events.append)
        let logger = Logger(label: "test")
        let commands = HCICommandChannel(timeout: .seconds(1))
        table = ConnectionTable(
            transmitter: transmitter, commands: commands, preferredParameters: nil, eventSink: sink, logger: logger)
        advertiser = Advertiser(
            settings: nil, commands: commands, maxCentrals: 2, eventSink: sink, logger: logger)
        let configuration = HostConfiguration(
            transport: .tcp(host: "fake", port: 1), stateDirectory: try temporaryDirectory("link-dispatcher").path,
            advertising: nil)
        let security = SecurityCoordinator(
            configuration: configuration, server: server, transmitter: transmitter, connections: table,
            eventSink: sink, stateWriter: StateFileWriter(), logger: logger)
        links = LinkDispatcher(
            server: server, transmitter: transmitter, connections: table, advertiser: advertiser, security: security,
            eventSink: sink, logger: logger)
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
    }

    static func connection(_ handle: UInt16, role: LEConnectionComplete.Role = .peripheral) -> HCIEvent {
        .le(
            .connectionComplete(
                LEConnectionComplete(
                    status: .success, handle: handle, role: role, peerAddressType: 1, peerAddress: peer, interval: 24,
                    latency: 0, supervisionTimeout: 400)))
    }

    /// One L2CAP frame in one ACL packet from the central.
    static func acl(_ handle: UInt16, channel: UInt16, _ payload: [UInt8]) -> HCIACLPacket {
        let length = UInt16(payload.count)
        let header = [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(channel & 0xFF), UInt8(channel >> 8)]
        return HCIACLPacket(handle: handle, boundary: .firstFlushable, data: header + payload)
    }

    /// A notification queued for the central on `handle`.
    func sendUpdate(on handle: UInt16) {
        transmitter.send(L2CAPFrame(channel: L2CAPChannel.att, payload: [0x1B, 0x03, 0x00, 0x01]), on: handle, isUpdate: true)
    }

    @Test func aConnectionOpensAcrossTheComponentsAndAsksToReadvertise() async throws {
        let followUp = links.handle(Self.connection(0x40), local: Self.local)
        let central = try #require(table[0x40]?.central)
        #expect(central.address == Self.peer)
        #expect(followUp == .readvertiseAndRequestFasterLink(central))
        var serverEvents = server.events.makeAsyncIterator()
        #expect(await serverEvents.next() == .connected(central))
        #expect(events.all == [.connected(central)], "the host's event is out before the packet's call returns")

        #expect(links.handle(Self.connection(0x41, role: .central), local: Self.local) == nil)
        #expect(table.count == 1, "a central-role connection is not a central of ours")
    }

    /// No buffer sits between the host and its sink, so none overflows: a burst of more events
    /// than the stream it replaced kept (the newest 1,024) reaches the sink whole and in order.
    @Test func everyEventOfABurstReachesTheSinkInOrder() throws {
        for _ in 0..<600 {
            _ = links.handle(Self.connection(0x40), local: Self.local)
            _ = links.handle(.disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminated), local: Self.local)
        }
        let recorded = events.all
        #expect(recorded.count == 1_200)
        let kinds = recorded.map { event -> String in
            switch event {
            case .connected: "connected"
            case .disconnected(_, reason: .remoteUserTerminated): "disconnected"
            default: "\(event)"
            }
        }
        #expect(kinds == Array(repeating: ["connected", "disconnected"], count: 600).flatMap { $0 })
        guard case .connected(let first) = recorded.first, case .connected(let last) = recorded[1_198] else {
            Issue.record("no connection first: \(recorded.prefix(2))")
            return
        }
        #expect(last.connectionID == first.connectionID + 599)
    }

    @Test func framesGoToTheirChannelAndDataForAnUnknownHandleIsDropped() async throws {
        _ = links.handle(Self.connection(0x40), local: Self.local)
        let central = try #require(table[0x40]?.central)
        links.received(Self.acl(0x41, channel: L2CAPChannel.att, [0x0A, 0x03, 0x00]))
        links.received(Self.acl(0x40, channel: L2CAPChannel.att, [0x0A, 0x03, 0x00]))
        var serverEvents = server.events.makeAsyncIterator()
        #expect(await serverEvents.next() == .connected(central))
        #expect(await serverEvents.next() == .pdu([0x0A, 0x03, 0x00], central), "only the connected handle's PDU")

        // LE signaling (a Connection Parameter Update Response) is not the server's.
        links.received(Self.acl(0x40, channel: L2CAPChannel.leSignaling, [0x13, 0x01, 0x02, 0x00, 0x00, 0x00]))
        links.received(Self.acl(0x40, channel: L2CAPChannel.att, [0x0A, 0x04, 0x00]))
        #expect(await serverEvents.next() == .pdu([0x0A, 0x04, 0x00], central))
    }

    @Test func theLongTermKeyRequestOfAConnectedCentralGetsItsReply() async throws {
        _ = links.handle(Self.connection(0x40), local: Self.local)
        let central = try #require(table[0x40]?.central)
        let request = HCIEvent.le(.longTermKeyRequest(handle: 0x40, rand: 0, ediv: 0))
        // No bond and no pairing under way: the Negative Reply.
        #expect(
            links.handle(request, local: Self.local)
                == .longTermKeyReply(.leLongTermKeyRequestNegativeReply(handle: 0x40), to: central))
        #expect(links.handle(.le(.longTermKeyRequest(handle: 0x41, rand: 0, ediv: 0)), local: Self.local) == nil)
    }

    @Test func completedUpdatesReturnAsCreditsAndADisconnectionReturnsTheUndelivered() async throws {
        _ = links.handle(Self.connection(0x40), local: Self.local)
        let central = try #require(table[0x40]?.central)
        for _ in 0..<3 { sendUpdate(on: 0x40) }
        var serverEvents = server.events.makeAsyncIterator()
        #expect(await serverEvents.next() == .connected(central))

        let completed = HCIEvent.numberOfCompletedPackets([HCIEvent.CompletedPackets(handle: 0x40, count: 1)])
        #expect(links.handle(completed, local: Self.local) == nil)
        #expect(await serverEvents.next() == .credits(1))

        let disconnection = HCIEvent.disconnectionComplete(status: .success, handle: 0x40, reason: .remoteUserTerminated)
        #expect(links.handle(disconnection, local: Self.local) == .readvertise)
        #expect(await serverEvents.next() == .disconnected(central))
        #expect(await serverEvents.next() == .credits(2), "the two updates still in the controller")
        #expect(table.count == 0)
        #expect(links.handle(disconnection, local: Self.local) == nil, "disconnected once")
    }

    @Test func aLostControllerDisconnectsEveryCentralAndReturnsTheirUpdates() async throws {
        _ = links.handle(Self.connection(0x40), local: Self.local)
        _ = links.handle(Self.connection(0x41), local: Self.local)
        let first = try #require(table[0x40]?.central)
        let second = try #require(table[0x41]?.central)
        sendUpdate(on: 0x41)
        links.sessionEnded()
        var serverEvents = server.events.makeAsyncIterator()
        #expect(await serverEvents.next() == .connected(first))
        #expect(await serverEvents.next() == .connected(second))
        #expect(await serverEvents.next() == .disconnected(first))
        #expect(await serverEvents.next() == .disconnected(second))
        #expect(await serverEvents.next() == .credits(1))
        #expect(table.count == 0)
    }
}
