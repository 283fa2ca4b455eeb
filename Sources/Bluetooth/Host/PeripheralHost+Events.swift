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
            let delivered = transmitter.completed(entries)
            for (handle, count) in delivered.sorted(by: { $0.key < $1.key }) where count > 0 {
                if let central = connections[handle]?.central { await server.updatesDelivered(count, to: central) }
            }
            let total = delivered.values.reduce(0, +)
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
            guard let central = connections[handle]?.central else { return }
            if status == .success {
                logger.info("\(central): interval \(Double(interval) * 1.25) ms, latency \(latency), timeout \(Int(timeout) * 10) ms")
                eventSink.yield(
                    .connectionParametersChanged(
                        central, interval: interval, latency: latency,
                        supervisionTimeout: timeout))
            } else {
                logger.info("\(central): connection update failed: \(status)")
            }
        case .dataLengthChange(let handle, let txOctets, _, let rxOctets, _):
            guard let central = connections[handle]?.central else { return }
            logger.info("\(central): data length \(txOctets) bytes out, \(rxOctets) in")
            eventSink.yield(.dataLengthChanged(central, maxTxOctets: txOctets, maxRxOctets: rxOctets))
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            guard let central = connections[handle]?.central else { return }
            if status == .success {
                logger.info("\(central): PHY \(tx == 2 ? "2M" : "\(tx)") out, \(rx == 2 ? "2M" : "\(rx)") in")
                eventSink.yield(.phyChanged(central, txPHY: tx, rxPHY: rx))
            } else {
                logger.info("\(central): PHY update refused: \(status); staying on the current PHY")
            }
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
        let connection = connections.open(handle: event.handle, peer: event.peerAddress, transmitter: transmitter)
        let central = connection.central
        // A controller stops advertising when a central connects (legacy and extended alike).
        advertiser.markStopped()
        logger.info("central \(central) connected (\(connections.count) connected); interval \(Double(event.interval) * 1.25) ms")
        eventSink.yield(.connected(central))
        await server.centralConnected(connection.bearer)
        await security.connectionOpened(connection, local: controller?.address ?? .zero)
        askForPreferredParameters(
            connection, interval: event.interval, latency: event.latency,
            supervisionTimeout: event.supervisionTimeout)
        spawn { host in
            await host.readvertise()
            await host.requestFasterLink(for: central)
        }
    }

    /// Asks the central for the configured connection parameters when the connection it made
    /// does not meet them (an interval outside the range, another latency or supervision
    /// timeout), with an L2CAP Connection Parameter Update Request (Vol 3 Part A 4.20); the
    /// central decides, and an accepted request ends in an LE Connection Update Complete.
    private func askForPreferredParameters(
        _ connection: ConnectionState, interval: UInt16, latency: UInt16,
        supervisionTimeout: UInt16
    ) {
        guard let wish = configuration.preferredConnection,
            !(wish.intervalMin...wish.intervalMax).contains(interval) || latency != wish.latency
                || supervisionTimeout != wish.supervisionTimeout
        else { return }
        let central = connection.central
        let asked =
            "interval \(Double(wish.intervalMin) * 1.25)–\(Double(wish.intervalMax) * 1.25) ms, "
            + "latency \(wish.latency), timeout \(Int(wish.supervisionTimeout) * 10) ms"
        logger.info("asking \(central) for the configured connection parameters: \(asked)")
        let request = connection.signaling.requestParameterUpdate(wish)
        transmitter.send(L2CAPFrame(channel: L2CAPChannel.leSignaling, payload: request), on: central.handle)
    }

    /// Asks for Data Length Extension and the 2M PHY where the controller supports them. A
    /// refusal or a command never answered (bounded by the command timeout) changes nothing.
    private func requestFasterLink(for central: Central) async {
        guard let info = controller else { return }
        if info.canSetDataLength {
            do {
                let result = try await commands.execute(.leSetDataLength(handle: central.handle, txOctets: 251, txTime: 2120))
                if result.status != .success {
                    logger.info("\(central): data length extension refused: \(result.status)")
                }
            } catch {
                logger.info("\(central): data length extension not available: \(error)")
            }
        }
        if info.canSet2MPHY {
            do {
                let result = try await commands.execute(.leSetPHY2M(handle: central.handle))
                if result.status != .success {
                    logger.info("\(central): 2M PHY refused: \(result.status)")
                }
            } catch {
                logger.info("\(central): 2M PHY not available: \(error)")
            }
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
            switch connection.signaling.receive(frame.payload) {
            case .reply(let bytes):
                transmitter.send(L2CAPFrame(channel: L2CAPChannel.leSignaling, payload: bytes), on: central.handle)
            case .parameterUpdateAnswered(let accepted):
                logger.info("\(central) \(accepted ? "accepted" : "rejected") the connection parameter request")
                eventSink.yield(.connectionParameterUpdateAnswered(central, accepted: accepted))
            case .rejected(let identifier):
                logger.info("\(central) rejected signaling command \(identifier)")
            case .malformed(let count):
                logger.warning("\(central): dropped a malformed \(count)-byte signaling packet")
            case .ignored:
                break
            }
        case L2CAPChannel.securityManager:
            await security.received(frame.payload, from: connection)
        default:
            logger.warning(
                "\(central): dropped \(frame.payload.count) bytes for unsupported L2CAP channel 0x\(String(frame.channel, radix: 16))")
        }
    }
}
