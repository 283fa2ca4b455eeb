import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP

extension PeripheralHost {
    /// Runs follow-up commands off the event path: the event loop must keep reading, since the
    /// answers to those commands arrive through it. Cancelled when the session ends.
    func spawn(_ body: @escaping @Sendable (isolated PeripheralHost) async -> Void) {
        let id = nextSessionTaskID
        nextSessionTaskID += 1
        sessionTasks[id] = Task {
            await body(self)
            self.sessionTaskFinished(id)
        }
    }

    private func sessionTaskFinished(_ id: UInt64) { sessionTasks[id] = nil }

    /// Handles one packet from the controller; returns a reason when the controller must be
    /// considered lost.
    func handle(_ packet: HCIPacket) async -> String? {
        switch packet {
        case .event(let event):
            return await handle(event)
        case .acl(let acl):
            await handle(acl)
        case .malformed(let type, let bytes, let reason):
            logger.warning("dropped a malformed HCI packet (type \(type), \(bytes.count) bytes): \(reason)")
        case .command, .other:
            break
        }
        return nil
    }

    private func handle(_ event: HCIEvent) async -> String? {
        switch event {
        case .commandComplete(_, let opcode, let returnParameters):
            if !commands.commandComplete(opcode, returnParameters: returnParameters), opcode == .reset {
                return "the controller reset itself"
            }
        case .commandStatus(let status, _, let opcode):
            _ = commands.commandStatus(opcode, status: status)
        case .hardwareError(let code):
            return "hardware error 0x\([code].hexString)"
        case .numberOfCompletedPackets(let entries):
            // Per central first, so the server sees whose link moved when the room frees.
            transmitter.completed(entries, delivered: &deliveredUpdates)
            var total = 0
            for delivered in deliveredUpdates {
                total += delivered.count
                if let central = connections[delivered.handle]?.central {
                    await server.updatesDelivered(delivered.count, to: central)
                }
            }
            if total > 0 { await server.transmitCreditsAvailable(total) }
        case .disconnectionComplete(let status, let handle, let reason):
            guard status == .success else {
                logger.warning("disconnection of handle \(handle) failed: \(status)")
                return nil
            }
            await disconnected(handle: handle, reason: reason)
        case .encryptionChange(let status, let handle, let enabled):
            guard let connection = connections[handle] else { return nil }
            await security.encryptionChanged(of: connection, status: status, enabled: enabled)
        case .encryptionKeyRefreshComplete(let status, let handle):
            guard let connection = connections[handle] else { return nil }
            await security.encryptionChanged(of: connection, status: status, enabled: true)
        case .le(let meta):
            await handle(meta)
        case .unknown(let code, _):
            if code == 0x1A {
                logger.warning("the controller reports a data buffer overflow")
            }
        }
        return nil
    }

    private func handle(_ meta: LEMetaEvent) async {
        switch meta {
        case .connectionComplete(let event):
            await connected(event)
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            connections.connectionUpdated(handle, status: status, interval: interval, latency: latency, supervisionTimeout: timeout)
        case .dataLengthChange(let handle, let txOctets, _, let rxOctets, _):
            connections.dataLengthChanged(handle, txOctets: txOctets, rxOctets: rxOctets)
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            connections.phyUpdated(handle, status: status, tx: tx, rx: rx)
        case .longTermKeyRequest(let handle, let rand, let ediv):
            longTermKeyRequested(handle: handle, rand: rand, ediv: ediv)
        case .advertisingSetTerminated(let status, _, _, _):
            // The set stopped because a central connected (or it timed out); the Connection
            // Complete event restarts it.
            if status == .success { advertiser.markStopped() }
        case .unknown:
            break
        }
    }

    private func connected(_ event: LEConnectionComplete) async {
        guard event.status == .success else {
            logger.info("a connection attempt failed: \(event.status)")
            return
        }
        guard event.role == .peripheral else {
            logger.warning("ignoring a central-role connection (handle \(event.handle)); gattway is a peripheral")
            return
        }
        transmitter.open(event.handle)
        let connection = connections.open(handle: event.handle, peer: event.peerAddress)
        let central = connection.central
        // A controller stops advertising when a central connects (legacy and extended alike).
        advertiser.markStopped()
        logger.info("central \(central) connected (\(connections.count) connected); interval \(Double(event.interval) * 1.25) ms")
        eventSink.yield(.connected(central))
        await server.centralConnected(connection.bearer)
        await security.connectionOpened(connection, local: controller?.address ?? .zero)
        connections.askForPreferredParameters(
            connection, interval: event.interval, latency: event.latency,
            supervisionTimeout: event.supervisionTimeout)
        spawn { host in
            await host.readvertise()
            await host.connections.requestFasterLink(for: central, on: host.controller)
        }
    }

    private func disconnected(handle: UInt16, reason: HCIStatus) async {
        guard let connection = connections.remove(handle) else { return }
        let dropped = transmitter.close(handle)
        security.connectionClosed(handle)
        logger.info("central \(connection.central) disconnected: \(reason) (\(connections.count) connected)")
        eventSink.yield(.disconnected(connection.central, reason: reason))
        await server.centralDisconnected(connection.central)
        if dropped > 0 { await server.transmitCreditsAvailable(dropped) }
        spawn { host in await host.readvertise() }
    }

    private func handle(_ acl: HCIACLPacket) async {
        guard let connection = connections[acl.handle] else {
            logger.warning("dropped \(acl.data.count) bytes of ACL data for unknown handle \(acl.handle)")
            return
        }
        let (frames, problems) = connection.reassembler.push(acl)
        for problem in problems { logger.warning("\(connection.central): \(problem)") }
        for frame in frames { await deliver(frame, from: connection) }
    }

    private func deliver(_ frame: L2CAPFrame, from connection: ConnectionState) async {
        let central = connection.central
        switch frame.channel {
        case L2CAPChannel.att:
            await server.received(frame.payload, from: central)
            await security.persistSubscriptions(of: connection)
        case L2CAPChannel.leSignaling:
            connections.signalingReceived(frame.payload, from: connection)
        case L2CAPChannel.securityManager:
            await security.received(frame.payload, from: connection)
        default:
            logger.warning(
                "\(central): dropped \(frame.payload.count) bytes for unsupported L2CAP channel 0x\(String(frame.channel, radix: 16))")
        }
    }
}
