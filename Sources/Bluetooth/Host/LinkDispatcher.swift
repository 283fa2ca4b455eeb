import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import Logging

/// Commands a link event calls for. The host runs them off the event path, in a session task:
/// their answers arrive through the event loop, which must keep reading meanwhile.
enum LinkFollowUp: Equatable, Sendable {
    /// Advertising again after a disconnection, when there is room for another central.
    case readvertise
    /// Advertising again after a connection (the controller stopped it), then asking the new
    /// central's link for a larger data length and a faster PHY.
    case readvertiseAndRequestFasterLink(Central)
    /// The answer to an LE Long Term Key Request.
    case longTermKeyReply(HCICommand, to: Central)
}

/// The controller's events about the links to centrals, and the data they carry: a connection
/// opens and closes across the components and the server, ACL data is reassembled into L2CAP
/// frames and routed to ATT, LE signaling or the Security Manager, and Number Of Completed
/// Packets returns credits to the transmitter and the server. Commands these events call for
/// come back as a `LinkFollowUp` for the host to run.
///
/// Owned by `PeripheralHost` and used only on its executor, the event loop; synchronous, like the
/// server and the security coordinator it calls, so a packet goes from the transport to the
/// server in one call chain.
final class LinkDispatcher {
    private let server: any ATTServer
    private let transmitter: LinkTransmitter
    private let connections: ConnectionTable
    private let advertiser: Advertiser
    private let security: SecurityCoordinator
    private let eventSink: HostEventOutlet
    private let logger: Logger
    /// Kept between Number Of Completed Packets events, which come once per packet sent.
    private var deliveredUpdates: [DeliveredUpdates] = []

    init(
        server: any ATTServer, transmitter: LinkTransmitter, connections: ConnectionTable, advertiser: Advertiser,
        security: SecurityCoordinator, eventSink: HostEventOutlet, logger: Logger
    ) {
        self.server = server
        self.transmitter = transmitter
        self.connections = connections
        self.advertiser = advertiser
        self.security = security
        self.eventSink = eventSink
        self.logger = logger
    }

    /// Handles an event about the links; `local` is the controller's address, which pairing of
    /// a new connection needs. The host handles the command channel's events and hardware errors.
    func handle(_ event: HCIEvent, local: BluetoothAddress) -> LinkFollowUp? {
        switch event {
        case .numberOfCompletedPackets(let entries):
            packetsCompleted(entries)
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == .success else {
                logger.warning("disconnection of handle \(handle) failed: \(status)")
                return nil
            }
            return disconnected(handle: handle, reason: reason)
        case .encryptionChange(let status, let handle, let enabled):
            guard let connection = connections[handle] else { return nil }
            security.encryptionChanged(of: connection, status: status, enabled: enabled)
        case .encryptionKeyRefreshComplete(let status, let handle):
            guard let connection = connections[handle] else { return nil }
            security.encryptionChanged(of: connection, status: status, enabled: true)
        case .le(let meta):
            return handle(meta, local: local)
        case .unknown(let code, _):
            if code == 0x1A {
                logger.warning("the controller reports a data buffer overflow")
            }
        case .commandComplete, .commandStatus, .hardwareError:
            break
        }
        return nil
    }

    private func handle(_ meta: LEMetaEvent, local: BluetoothAddress) -> LinkFollowUp? {
        switch meta {
        case .connectionComplete(let event):
            return connected(event, local: local)
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            connections.connectionUpdated(handle, status: status, interval: interval, latency: latency, supervisionTimeout: timeout)
        case .dataLengthChange(let handle, let txOctets, _, let rxOctets, _):
            connections.dataLengthChanged(handle, txOctets: txOctets, rxOctets: rxOctets)
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            connections.phyUpdated(handle, status: status, tx: tx, rx: rx)
        case .longTermKeyRequest(let handle, let rand, let ediv):
            guard let central = connections.central(on: handle) else { return nil }
            return .longTermKeyReply(security.longTermKeyReply(to: central, rand: rand, ediv: ediv), to: central)
        case .advertisingSetTerminated(let status, _, _, _):
            // The set stopped because a central connected (or it timed out); the Connection
            // Complete event restarts it.
            if status == .success { advertiser.markStopped() }
        case .unknown:
            break
        }
        return nil
    }

    /// Per central first, so the server sees whose link moved when the room frees.
    private func packetsCompleted(_ entries: HCIEvent.CompletedPacketsList) {
        transmitter.completed(entries, delivered: &deliveredUpdates)
        // By index: iterating the property kept its own reference to the array.
        for index in deliveredUpdates.indices {
            let delivered = deliveredUpdates[index]
            if let central = connections.central(on: delivered.handle) {
                server.updatesDelivered(delivered.count, to: central)
            } else {
                server.transmitCreditsAvailable(delivered.count)
            }
        }
    }

    private func connected(_ event: LEConnectionComplete, local: BluetoothAddress) -> LinkFollowUp? {
        guard event.status == .success else {
            logger.info("a connection attempt failed: \(event.status)")
            return nil
        }
        guard event.role == .peripheral else {
            logger.warning("ignoring a central-role connection (handle \(event.handle)); gattway is a peripheral")
            return nil
        }
        transmitter.open(event.handle)
        let connection = connections.open(handle: event.handle, peer: event.peerAddress)
        let central = connection.central
        // A controller stops advertising when a central connects (legacy and extended alike).
        advertiser.markStopped()
        logger.info("central \(central) connected (\(connections.count) connected); interval \(Double(event.interval) * 1.25) ms")
        eventSink(.connected(central))
        server.centralConnected(connection.bearer)
        security.connectionOpened(connection, local: local)
        connections.askForPreferredParameters(
            connection, interval: event.interval, latency: event.latency,
            supervisionTimeout: event.supervisionTimeout)
        return .readvertiseAndRequestFasterLink(central)
    }

    private func disconnected(handle: UInt16, reason: HCIStatus) -> LinkFollowUp? {
        guard let connection = connections.remove(handle) else { return nil }
        let dropped = transmitter.close(handle)
        security.connectionClosed(handle)
        logger.info("central \(connection.central) disconnected: \(reason) (\(connections.count) connected)")
        eventSink(.disconnected(connection.central, reason: reason))
        server.centralDisconnected(connection.central)
        if dropped > 0 { server.transmitCreditsAvailable(dropped) }
        return .readvertise
    }

    /// The controller is gone: every central is disconnected for the server, and the updates
    /// queued for them return as credits.
    func sessionEnded() {
        security.sessionEnded(closing: connections.inOrder.map(\.central.handle))
        let dropped = transmitter.stop()
        for connection in connections.removeAll() {
            eventSink(.disconnected(connection.central, reason: .hardwareFailure))
            server.centralDisconnected(connection.central)
        }
        if dropped > 0 { server.transmitCreditsAvailable(dropped) }
    }

    /// ACL data from a central: whole L2CAP frames go to their channel.
    func received(_ acl: HCIACLPacket) {
        guard let connection = connections[acl.handle] else {
            logger.warning("dropped \(acl.data.count) bytes of ACL data for unknown handle \(acl.handle)")
            return
        }
        let (frames, problems) = connection.reassembler.push(acl)
        for problem in problems { logger.warning("\(connection.central): \(problem)") }
        for frame in frames { deliver(frame, from: connection) }
    }

    private func deliver(_ frame: L2CAPFrame, from connection: ConnectionState) {
        let central = connection.central
        switch frame.channel {
        case L2CAPChannel.att:
            server.received(frame.payload, from: central)
            security.persistSubscriptions(of: connection)
        case L2CAPChannel.leSignaling:
            connections.signalingReceived(frame.payload, from: connection)
        case L2CAPChannel.securityManager:
            security.received(frame.payload, from: connection)
        default:
            logger.warning(
                "\(central): dropped \(frame.payload.count) bytes for unsupported L2CAP channel 0x\(String(frame.channel, radix: 16))")
        }
    }
}
