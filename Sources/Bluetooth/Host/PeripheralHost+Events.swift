import BluetoothCore
import BluetoothHCI

extension PeripheralHost {
    /// Handles one packet from the controller; returns a reason when the controller must be
    /// considered lost. The command channel's answers and hardware errors are the host's; the
    /// links' events and data go to `links`.
    func handle(_ packet: HCIPacket) -> String? {
        switch packet {
        case .event(.commandComplete(_, let opcode, let returnParameters)):
            if !commands.commandComplete(opcode, returnParameters: returnParameters), opcode == .reset {
                return "the controller reset itself"
            }
        case .event(.commandStatus(let status, _, let opcode)):
            _ = commands.commandStatus(opcode, status: status)
        case .event(.hardwareError(let code)):
            return "hardware error 0x\([code].hexString)"
        case .event(let event):
            if let followUp = links.handle(event, local: localAddress) { spawn(followUp) }
        case .acl(let acl):
            links.received(acl)
        case .malformed(let type, let bytes, let reason):
            logger.warning("dropped a malformed HCI packet (type \(type), \(bytes.count) bytes): \(reason)")
        case .command, .other:
            break
        }
        return nil
    }

    /// Runs a link event's follow-up commands off the event path: the event loop must keep
    /// reading, since the answers to those commands arrive through it. Cancelled when the
    /// session ends.
    private func spawn(_ followUp: LinkFollowUp) {
        let id = nextSessionTaskID
        nextSessionTaskID += 1
        sessionTasks[id] = Task {
            await self.run(followUp)
            self.sessionTaskFinished(id)
        }
    }

    private func sessionTaskFinished(_ id: UInt64) { sessionTasks[id] = nil }

    private func run(_ followUp: LinkFollowUp) async {
        switch followUp {
        case .readvertise:
            await readvertise()
        case .readvertiseAndRequestFasterLink(let central):
            await readvertise()
            await connections.requestFasterLink(for: central, on: controller)
        case .longTermKeyReply(let command, let central):
            do {
                try await commands.executeChecked(command)
            } catch {
                logger.warning("\(central): \(command.opcode) failed: \(error)")
            }
        }
    }
}
