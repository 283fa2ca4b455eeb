import BluetoothCore
import BluetoothHCI
import EventLoop
import Foundation

/// An in-memory controller for host tests: answers commands from a table, records everything
/// the host sends, and lets a test inject events, ACL data or a link failure.
///
/// Packets reach the host as a real transport's do: on the event loop, each in its own turn
/// (never inside the host's own `send`), in order; injected before the host starts, they wait.
final class FakeController: HCITransport, @unchecked Sendable {
    let spec = HCITransportSpec.tcp(host: "fake", port: 1)
    /// Every packet the host sent, in order.
    let sent: AsyncStream<HCIPacket>
    private let sentContinuation: AsyncStream<HCIPacket>.Continuation

    private let lock = NSLock()
    private var receiver: (receive: @Sendable (HCIPacket) -> Void, ended: @Sendable (HCITransportError?) -> Void)?
    /// Packets and the end of the link, before the host started; the end is final.
    private var waiting: [HCIPacket] = []
    private var endedWith: HCITransportError??
    private var silentOpcodes: Set<HCIOpcode>
    private var commandTimes: [(HCIOpcode, ContinuousClock.Instant)] = []
    private let publicAddress: BluetoothAddress
    private let buffers: ACLBufferSize
    private let leFeatures: UInt64
    private let supportedCommands: [UInt8]

    init(
        publicAddress: BluetoothAddress = BluetoothAddress("F0:00:00:00:00:01")!,
        buffers: ACLBufferSize = ACLBufferSize(dataLength: 27, packetCount: 4),
        leFeatures: UInt64 = 1 << 5 | 1 << 8, supportsDataLengthAndPHY: Bool = true,
        supportsExtendedAdvertising: Bool = false, silentOpcodes: Set<HCIOpcode> = []
    ) {
        (sent, sentContinuation) = AsyncStream.makeStream(of: HCIPacket.self)
        self.publicAddress = publicAddress
        self.buffers = buffers
        self.leFeatures = leFeatures
        var commands = [UInt8](repeating: 0, count: 64)
        if supportsDataLengthAndPHY {
            commands[33] |= 1 << 6
            commands[35] |= 1 << 6
        }
        if supportsExtendedAdvertising { commands[36] |= 1 << 2 }
        supportedCommands = commands
        self.silentOpcodes = silentOpcodes
    }

    func send(_ packet: HCIPacket) throws(HCITransportError) {
        // A command's time is recorded before the test can see the command: a test that reads
        // `sendTimes` once it has the command must find it there.
        if case .command(let command) = packet {
            let now = ContinuousClock.now
            lock.withLock { commandTimes.append((command.opcode, now)) }
        }
        sentContinuation.yield(packet)
        guard case .command(let command) = packet else { return }
        let silent = lock.withLock { silentOpcodes.contains(command.opcode) }
        if silent { return }
        inject(.event(reply(to: command)))
    }

    private func reply(to command: HCICommand) -> HCIEvent {
        var parameters: [UInt8] = [0x00]
        switch command.opcode {
        case .readLocalVersion: parameters += [0x0D, 0x00, 0x00, 0x0D, 0xFF, 0xFF, 0x00, 0x00]
        case .readLocalSupportedCommands: parameters += supportedCommands
        case .leReadLocalSupportedFeatures:
            parameters += (0..<8).map { UInt8(truncatingIfNeeded: leFeatures >> (8 * $0)) }
        case .readBDADDR: parameters += publicAddress.bytes
        case .leReadBufferSize:
            parameters += [
                UInt8(buffers.dataLength & 0xFF), UInt8(buffers.dataLength >> 8),
                UInt8(buffers.packetCount)
            ]
        case .leReadAdvertisingTxPower: parameters += [0xFC]
        case .leSetDataLength: parameters += [command.parameters[0], command.parameters[1]]
        case .leSetPHY, .disconnect:
            return .commandStatus(status: .success, numCommandPackets: 1, opcode: command.opcode)
        default: break
        }
        return .commandComplete(numCommandPackets: 1, opcode: command.opcode, returnParameters: parameters)
    }

    func start(
        receive: @escaping @Sendable (HCIPacket) -> Void, ended: @escaping @Sendable (HCITransportError?) -> Void
    ) {
        let (packets, end) = lock.withLock {
            receiver = (receive, ended)
            defer { waiting = [] }
            return (waiting, endedWith)
        }
        for packet in packets { EventLoop.shared.execute { receive(packet) } }
        if let end { EventLoop.shared.execute { ended(end) } }
    }

    func inject(_ packet: HCIPacket) {
        let receive = lock.withLock { () -> (@Sendable (HCIPacket) -> Void)? in
            guard endedWith == nil else { return nil }
            if receiver == nil { waiting.append(packet) }
            return receiver?.receive
        }
        if let receive { EventLoop.shared.execute { receive(packet) } }
    }

    /// Ends the link once, after the packets injected before.
    private func end(_ failure: HCITransportError?) {
        let ended = lock.withLock { () -> (@Sendable (HCITransportError?) -> Void)? in
            guard endedWith == nil else { return nil }
            endedWith = .some(failure)
            return receiver?.ended
        }
        if let ended { EventLoop.shared.execute { ended(failure) } }
    }

    /// When the host sent each `opcode` command, in order: measured here, where the host's
    /// timing shows, not where the test happens to look.
    func sendTimes(of opcode: HCIOpcode) -> [ContinuousClock.Instant] {
        lock.withLock { commandTimes.filter { $0.0 == opcode }.map(\.1) }
    }

    func failLink() {
        end(HCITransportError(.linkLost, "fake link dropped"))
    }

    func close() {
        end(nil)
        sentContinuation.finish()
    }

    /// A peripheral-role LE Connection Complete for `handle`.
    func connect(handle: UInt16, peer: BluetoothAddress) {
        inject(
            .event(
                .le(
                    .connectionComplete(
                        LEConnectionComplete(
                            status: .success, handle: handle, role: .peripheral, peerAddressType: 1, peerAddress: peer,
                            interval: 24, latency: 0, supervisionTimeout: 500)))))
    }

    func receive(_ channel: UInt16, _ payload: [UInt8], on handle: UInt16) {
        var frame = [
            UInt8(payload.count & 0xFF), UInt8(payload.count >> 8),
            UInt8(channel & 0xFF), UInt8(channel >> 8)
        ]
        frame += payload
        inject(.acl(HCIACLPacket(handle: handle, boundary: .firstFlushable, data: frame)))
    }

    func complete(_ count: UInt16, on handle: UInt16) {
        inject(.event(.numberOfCompletedPackets([.init(handle: handle, count: count)])))
    }
}

extension AsyncSequence where Self: Sendable {
    /// The first element matching `predicate`, or nil when the sequence ends first.
    func first(matching predicate: (Element) -> Bool) async rethrows -> Element? {
        for try await element in self where predicate(element) { return element }
        return nil
    }
}
