import BluetoothHCI
import BluetoothL2CAP

/// Host → controller flow control (Core Vol 4 Part E 4.1.1): the controller holds
/// `buffers.packetCount` ACL fragments; each fragment sent takes one buffer until a Number Of
/// Completed Packets event gives it back. Frames wait in a queue per connection and connections
/// take turns, so one busy central cannot starve the others.
///
/// Update frames (notifications, indications) are counted: `completed` and `close` report how
/// many left the host, which is the transmit-queue room the GATT server's `updateValue` uses.
/// Pure: the caller sends what `takeSendable()` returns.
public struct ACLScheduler: Sendable {
    public let buffers: ACLBufferSize

    public private(set) var freeBuffers: Int
    /// An encoded L2CAP frame, cut into fragments as buffers free up.
    private struct QueuedFrame {
        var bytes: [UInt8]
        /// Where the next fragment starts.
        var offset = 0
        var isUpdate: Bool
    }
    private var queues: [UInt16: [QueuedFrame]] = [:]
    /// Per connection, one entry per fragment in the controller, oldest first: true when it is
    /// the last fragment of an update frame.
    private var inFlight: [UInt16: [Bool]] = [:]
    /// Round-robin order of connections.
    private var order: [UInt16] = []
    private var nextTurn = 0

    public init(buffers: ACLBufferSize) {
        precondition(buffers.dataLength > 0 && buffers.packetCount > 0, "the controller has no ACL buffers")
        self.buffers = buffers
        freeBuffers = buffers.packetCount
    }

    public mutating func open(_ handle: UInt16) {
        guard queues[handle] == nil else { return }
        queues[handle] = []
        inFlight[handle] = []
        order.append(handle)
    }

    /// Forgets a disconnected connection and returns how many of its update frames were dropped.
    /// The buffers it held count as free again (the controller flushes them on disconnection,
    /// Vol 4 Part E 7.7.5).
    @discardableResult
    public mutating func close(_ handle: UInt16) -> Int {
        let sent = inFlight.removeValue(forKey: handle) ?? []
        let queued = queues.removeValue(forKey: handle) ?? []
        freeBuffers += sent.count
        if let index = order.firstIndex(of: handle) {
            order.remove(at: index)
            if nextTurn > index { nextTurn -= 1 }
        }
        if nextTurn >= order.count { nextTurn = 0 }
        return sent.filter { $0 }.count + queued.filter(\.isUpdate).count
    }

    /// Update frames queued or in the controller, over all connections.
    public var pendingUpdates: Int {
        inFlight.values.reduce(0) { $0 + $1.filter { $0 }.count }
            + queues.values.reduce(0) { $0 + $1.filter(\.isUpdate).count }
    }

    /// Queues a frame; false for an unknown (closed) handle.
    @discardableResult
    public mutating func enqueue(_ frame: L2CAPFrame, on handle: UInt16, isUpdate: Bool = false) -> Bool {
        guard queues[handle] != nil else { return false }
        queues[handle]!.append(QueuedFrame(bytes: frame.encoded, isUpdate: isUpdate))
        return true
    }

    /// Buffers given back by the controller; returns how many update frames are now fully
    /// delivered. Counts for unknown handles are ignored (the connection already closed and its
    /// buffers were reclaimed then); counts beyond what is in flight are capped.
    public mutating func completed(_ count: Int, on handle: UInt16) -> Int {
        guard let inFlightCount = inFlight[handle]?.count else { return 0 }
        let returned = min(max(count, 0), inFlightCount)
        var delivered = 0
        for index in 0..<returned where inFlight[handle]![index] { delivered += 1 }
        // In place: this runs for every completed packet.
        inFlight[handle]!.removeFirst(returned)
        freeBuffers = min(freeBuffers + returned, buffers.packetCount)
        return delivered
    }

    /// The next fragment that may go to the controller now, taking a buffer for it; nil when
    /// none may (call until nil). Buffers are reserved: each connection is guaranteed its share
    /// (the buffers split evenly, at least one), and one beyond its share may only borrow buffers
    /// no other connection's unused share needs. So connections whose packets never complete —
    /// stalled centrals, however many — hold at most their shares, and the others keep theirs.
    public mutating func nextSendable() -> HCIACLPacket? {
        var idleTurns = 0
        let share = max(buffers.packetCount / max(order.count, 1), 1)
        while freeBuffers > 0, !order.isEmpty, idleTurns < order.count {
            if nextTurn >= order.count { nextTurn = 0 }
            let handle = order[nextTurn]
            nextTurn += 1
            guard queues[handle]?.isEmpty == false, mayTakeBuffer(handle, share: share) else {
                idleTurns += 1
                continue
            }
            // Mutated in place through the dictionary, not copied out and back (a copy of the
            // queue would be made for every packet).
            let packet = L2CAPFrame.fragment(
                of: queues[handle]![0].bytes, from: queues[handle]![0].offset, handle: handle,
                maxFragmentLength: buffers.dataLength)
            queues[handle]![0].offset += packet.data.count
            let frameDone = queues[handle]![0].offset == queues[handle]![0].bytes.count
            inFlight[handle, default: []].append(frameDone && queues[handle]![0].isUpdate)
            if frameDone { queues[handle]!.removeFirst() }
            freeBuffers -= 1
            return packet
        }
        return nil
    }

    /// Within its share, or borrowing only what no other connection's unused share needs.
    private func mayTakeBuffer(_ handle: UInt16, share: Int) -> Bool {
        if inFlight[handle, default: []].count < share { return true }
        let reservedForOthers = order.reduce(0) { $0 + ($1 == handle ? 0 : max(0, share - inFlight[$1, default: []].count)) }
        return freeBuffers > reservedForOthers
    }
}
