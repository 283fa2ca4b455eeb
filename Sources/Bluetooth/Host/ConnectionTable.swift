import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import Logging

/// The connected centrals by connection handle, and what concerns each link rather than what
/// it carries: the ids that tell a central apart from an earlier one on the same handle, LE
/// signaling (connection parameter requests and answers), and the link's parameters, data length
/// and PHY. Owned by `PeripheralHost` and used only on its executor, the event loop.
final class ConnectionTable {
    private let transmitter: LinkTransmitter
    private let commands: HCICommandChannel
    /// The connection parameters to ask a central for when its connection does not meet them.
    private let preferredParameters: ConnectionParameters?
    private let eventSink: HostEventOutlet
    private let logger: Logger
    /// In connection order. A list searched by handle, not a table keyed by it: a controller
    /// serves a handful of links, and every packet the controller completes looked its connection
    /// up, hashing the handle.
    private var connections: [ConnectionState] = []
    private var nextConnectionID: UInt64 = 1

    init(
        transmitter: LinkTransmitter, commands: HCICommandChannel, preferredParameters: ConnectionParameters?,
        eventSink: HostEventOutlet, logger: Logger
    ) {
        self.transmitter = transmitter
        self.commands = commands
        self.preferredParameters = preferredParameters
        self.eventSink = eventSink
        self.logger = logger
    }

    subscript(_ handle: UInt16) -> ConnectionState? { index(of: handle).map { connections[$0] } }

    /// The central on `handle`, read where its connection is: taking the connection out to read
    /// it retained and released the connection, for every packet the controller completes.
    func central(on handle: UInt16) -> Central? { index(of: handle).map { connections[$0].central } }

    private func index(of handle: UInt16) -> Int? { connections.firstIndex { $0.central.handle == handle } }

    var count: Int { connections.count }

    /// Every connection, in connection order.
    var inOrder: [ConnectionState] { connections }

    /// A central connected on `handle`: it gets the next connection id and an ATT bearer.
    func open(handle: UInt16, peer: BluetoothAddress) -> ConnectionState {
        let central = Central(connectionID: nextConnectionID, handle: handle, address: peer)
        nextConnectionID += 1
        let connection = ConnectionState(central: central, bearer: ATTBearer(central: central, transmitter: transmitter))
        connections.removeAll { $0.central.handle == handle }
        connections.append(connection)
        return connection
    }

    func remove(_ handle: UInt16) -> ConnectionState? {
        guard let position = index(of: handle) else { return nil }
        return connections.remove(at: position)
    }

    /// Forgets every connection; returns them in connection order.
    func removeAll() -> [ConnectionState] {
        defer { connections = [] }
        return connections
    }

    // MARK: LE signaling

    /// Asks the central for the configured connection parameters when the connection it made
    /// does not meet them (an interval outside the range, another latency or supervision
    /// timeout), with an L2CAP Connection Parameter Update Request (Vol 3 Part A 4.20); the
    /// central decides, and an accepted request ends in an LE Connection Update Complete.
    func askForPreferredParameters(
        _ connection: ConnectionState, interval: UInt16, latency: UInt16,
        supervisionTimeout: UInt16
    ) {
        guard let wish = preferredParameters,
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

    /// Asks a central for connection parameters matching `latency`; the central decides.
    func requestLatency(_ latency: ConnectionLatency, on connection: ConnectionState) {
        let central = connection.central
        let request = connection.signaling.requestParameterUpdate(latency.parameters)
        logger.info("asking \(central) for \(latency) latency")
        transmitter.send(L2CAPFrame(channel: L2CAPChannel.leSignaling, payload: request), on: central.handle)
    }

    /// One SDU of the LE signaling channel.
    func signalingReceived(_ payload: [UInt8], from connection: ConnectionState) {
        let central = connection.central
        switch connection.signaling.receive(payload) {
        case .reply(let bytes):
            transmitter.send(L2CAPFrame(channel: L2CAPChannel.leSignaling, payload: bytes), on: central.handle)
        case .parameterUpdateAnswered(let accepted):
            logger.info("\(central) \(accepted ? "accepted" : "rejected") the connection parameter request")
            eventSink(.connectionParameterUpdateAnswered(central, accepted: accepted))
        case .rejected(let identifier):
            logger.info("\(central) rejected signaling command \(identifier)")
        case .malformed(let count):
            logger.warning("\(central): dropped a malformed \(count)-byte signaling packet")
        case .ignored:
            break
        }
    }

    // MARK: The link's parameters, data length and PHY

    /// HCI LE Connection Update Complete.
    func connectionUpdated(_ handle: UInt16, status: HCIStatus, interval: UInt16, latency: UInt16, supervisionTimeout timeout: UInt16) {
        guard let central = self[handle]?.central else { return }
        if status == .success {
            logger.info("\(central): interval \(Double(interval) * 1.25) ms, latency \(latency), timeout \(Int(timeout) * 10) ms")
            eventSink(
                .connectionParametersChanged(
                    central, interval: interval, latency: latency,
                    supervisionTimeout: timeout))
        } else {
            logger.info("\(central): connection update failed: \(status)")
        }
    }

    /// HCI LE Data Length Change.
    func dataLengthChanged(_ handle: UInt16, txOctets: UInt16, rxOctets: UInt16) {
        guard let central = self[handle]?.central else { return }
        logger.info("\(central): data length \(txOctets) bytes out, \(rxOctets) in")
        eventSink(.dataLengthChanged(central, maxTxOctets: txOctets, maxRxOctets: rxOctets))
    }

    /// HCI LE PHY Update Complete.
    func phyUpdated(_ handle: UInt16, status: HCIStatus, tx: UInt8, rx: UInt8) {
        guard let central = self[handle]?.central else { return }
        if status == .success {
            logger.info("\(central): PHY \(tx == 2 ? "2M" : "\(tx)") out, \(rx == 2 ? "2M" : "\(rx)") in")
            eventSink(.phyChanged(central, txPHY: tx, rxPHY: rx))
        } else {
            logger.info("\(central): PHY update refused: \(status); staying on the current PHY")
        }
    }

    /// Asks for Data Length Extension and the 2M PHY where the controller supports them. A
    /// refusal or a command never answered (bounded by the command timeout) changes nothing.
    nonisolated(nonsending) func requestFasterLink(for central: Central, on controller: ControllerInfo?) async {
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
}
