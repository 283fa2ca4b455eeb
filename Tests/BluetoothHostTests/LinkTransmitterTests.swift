import BluetoothHCI
import BluetoothL2CAP
import Synchronization
import TestHarness
import Testing

@testable import BluetoothHost

/// A link whose every send fails, as a controller unplugged mid-write.
final class BrokenTransport: HCITransport, @unchecked Sendable {
    let spec = HCITransportSpec.tcp(host: "broken", port: 1)
    func start(receive: @escaping @Sendable (HCIPacket) -> Void, ended: @escaping @Sendable (HCITransportError?) -> Void) {}
    private let closed = Mutex(false)
    var isClosed: Bool { closed.withLock { $0 } }

    func send(_ packet: HCIPacket) throws(HCITransportError) { throw HCITransportError(.linkLost, "unplugged") }
    func close() { closed.withLock { $0 = true } }
}

/// `LinkTransmitter` over a recording controller: what reaches the controller, fragment by
/// fragment, as buffers allow, and the update frames it reports delivered or dropped.
@Suite(.onTheLoop) struct LinkTransmitterTests {
    let transport = CommandRecorder()
    let transmitter = LinkTransmitter()

    /// A one-fragment ATT frame carrying `byte`.
    static func frame(_ byte: UInt8, length: Int = 1) -> L2CAPFrame {
        L2CAPFrame(channel: L2CAPChannel.att, payload: [UInt8](repeating: byte, count: length))
    }

    /// (handle, count) of each connection with updates delivered.
    func completed(_ entries: [(UInt16, UInt16)]) -> [[Int]] {
        var delivered: [DeliveredUpdates] = []
        transmitter.completed(
            HCIEvent.CompletedPacketsList(entries.map { HCIEvent.CompletedPackets(handle: $0.0, count: $0.1) }), delivered: &delivered)
        return delivered.map { [Int($0.handle), $0.count] }
    }

    @Test func sendsOnlyWithAControllerAndToAnOpenConnection() {
        #expect(!transmitter.send(Self.frame(1), on: 0x40), "no controller yet")
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
        #expect(!transmitter.send(Self.frame(1), on: 0x40), "no such connection")
        transmitter.open(0x40)
        #expect(transmitter.send(Self.frame(2), on: 0x40))
        #expect(transport.aclSent.map(\.data) == [Self.frame(2).encoded])
        #expect(transport.aclSent.map(\.handle) == [0x40])
    }

    /// A frame longer than the controller's buffers goes in fragments of its data length, the
    /// first one marked as the start of a frame, each taking a buffer.
    @Test func cutsAFrameIntoFragmentsOfTheControllersDataLength() {
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 2))
        transmitter.open(0x40)
        let frame = Self.frame(7, length: 60)
        transmitter.send(frame, on: 0x40)
        #expect(transport.aclSent.map(\.data.count) == [27, 27], "two buffers, two fragments")
        #expect(completed([(0x40, 1)]) == [], "a response, not an update")
        #expect(transport.aclSent.map(\.data.count) == [27, 27, 10], "the last one as a buffer came back")
        #expect(transport.aclSent.map(\.boundary) == [.firstNonFlushable, .continuing, .continuing])
        #expect(transport.aclSent.flatMap(\.data) == frame.encoded)
    }

    /// Two centrals on four buffers: each is sure of two; one with more to send waits for its own
    /// buffers to come back, not the other's.
    @Test func eachCentralHasItsShareOfTheBuffers() {
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
        transmitter.open(0x40)
        transmitter.open(0x41)
        for byte: UInt8 in 1...4 { transmitter.send(Self.frame(byte), on: 0x40, isUpdate: true) }
        #expect(transport.aclSent.map(\.handle) == [0x40, 0x40], "two buffers stay for 0x41")
        transmitter.send(Self.frame(9), on: 0x41, isUpdate: true)
        #expect(transport.aclSent.map(\.handle) == [0x40, 0x40, 0x41])
        #expect(completed([(0x41, 1)]) == [[0x41, 1]])
        #expect(transport.aclSent.count == 3, "0x41's buffer is its share, not 0x40's")
        #expect(completed([(0x40, 2)]) == [[0x40, 2]])
        #expect(transport.aclSent.map(\.data).dropFirst(3) == [Self.frame(3).encoded, Self.frame(4).encoded])
    }

    /// Delivered updates are counted per connection in ascending handle order, several entries of
    /// one handle together, handles with none left out, and only this event's.
    @Test func reportsDeliveredUpdatesPerConnection() {
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 8))
        for handle: UInt16 in [0x42, 0x41, 0x40] { transmitter.open(handle) }
        transmitter.send(Self.frame(1), on: 0x42, isUpdate: true)
        transmitter.send(Self.frame(2), on: 0x42, isUpdate: true)
        transmitter.send(Self.frame(3), on: 0x41, isUpdate: true)
        transmitter.send(Self.frame(4), on: 0x40)
        // One array across events, as the host keeps it.
        var delivered: [DeliveredUpdates] = []
        let entries: [(UInt16, UInt16)] = [(0x42, 1), (0x40, 1), (0x41, 1), (0x42, 1)]
        transmitter.completed(
            HCIEvent.CompletedPacketsList(entries.map { HCIEvent.CompletedPackets(handle: $0.0, count: $0.1) }), delivered: &delivered)
        #expect(delivered.map { [Int($0.handle), $0.count] } == [[0x41, 1], [0x42, 2]])
        transmitter.completed([HCIEvent.CompletedPackets(handle: 0x40, count: 1)], delivered: &delivered)
        #expect(delivered.isEmpty, "a response, and nothing else in flight")
    }

    /// Closing a connection returns its updates never delivered (queued or in the controller) and
    /// frees its buffers for the others at once; stopping returns every one left and sends
    /// nothing until the next start.
    @Test func closingAndStoppingReturnTheUndeliveredUpdates() {
        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 2))
        transmitter.open(0x40)
        transmitter.open(0x41)
        for byte: UInt8 in 1...3 { transmitter.send(Self.frame(byte), on: 0x40, isUpdate: true) }
        for byte: UInt8 in 4...6 { transmitter.send(Self.frame(byte), on: 0x41, isUpdate: true) }
        #expect(transport.aclSent.map(\.handle) == [0x40, 0x41])
        #expect(transmitter.close(0x40) == 3)
        #expect(transport.aclSent.map(\.handle) == [0x40, 0x41, 0x41], "0x40's buffer went to 0x41")
        #expect(!transmitter.send(Self.frame(7), on: 0x40), "closed")

        #expect(transmitter.stop() == 3)
        #expect(!transmitter.send(Self.frame(8), on: 0x41), "stopped")
        #expect(completed([(0x41, 2)]) == [])
        #expect(transport.aclSent.count == 3)

        transmitter.start(transport: transport, buffers: ACLBufferSize(dataLength: 27, packetCount: 2))
        #expect(!transmitter.send(Self.frame(9), on: 0x41), "a new session knows no connection yet")
    }

    /// A send the link refuses closes the link (the host's recovery starts from its end).
    @Test func aFailedSendClosesTheLink() {
        let broken = BrokenTransport()
        transmitter.start(transport: broken, buffers: ACLBufferSize(dataLength: 27, packetCount: 2))
        transmitter.open(0x40)
        #expect(transmitter.send(Self.frame(1), on: 0x40), "queued")
        #expect(broken.isClosed)
    }
}
