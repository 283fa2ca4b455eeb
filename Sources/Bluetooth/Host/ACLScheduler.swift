import BluetoothHCI
import BluetoothL2CAP
import EventLoop

/// One connection's fragments in the controller, oldest first, and which of them are the last
/// fragment of an update frame. Fragments are numbered in the order they are sent; only those
/// that do not end an update are listed. Nearly every fragment ends one (a notification fits
/// one fragment), so sending one and having it completed, once per notification, only counts:
/// no array is appended to or emptied (about 100 instructions per notification when every
/// fragment was listed).
struct InFlightFragments: Sendable {
    /// The numbers of the next fragment to be sent and of the oldest still in flight.
    private var nextSent = 0
    private var oldest = 0
    /// The numbers of the fragments in flight that end no update, ascending, from
    /// `firstNotEnding` on (those before it have left; the array is emptied once all have).
    private var notEndingUpdate: [Int] = []
    private var firstNotEnding = 0

    var count: Int { nextSent - oldest }

    /// The update frames whose last fragment is in the controller.
    var updateCount: Int { count - (notEndingUpdate.count - firstNotEnding) }

    mutating func append(endsUpdate ends: Bool) {
        if !ends { notEndingUpdate.append(nextSent) }
        nextSent += 1
    }

    /// Removes the oldest `count` (at most `self.count`); returns how many of them ended an update.
    mutating func removeFirst(_ count: Int) -> Int {
        oldest += count
        var notEnding = 0
        while firstNotEnding < notEndingUpdate.count, notEndingUpdate[firstNotEnding] < oldest {
            firstNotEnding += 1
            notEnding += 1
        }
        if firstNotEnding > 0, firstNotEnding == notEndingUpdate.count {
            notEndingUpdate.removeAllKeepingStorage()
            firstNotEnding = 0
        }
        return count - notEnding
    }
}

/// Host → controller flow control (Core Vol 4 Part E 4.1.1): the controller holds
/// `buffers.packetCount` ACL fragments; each fragment sent takes one buffer until a Number Of
/// Completed Packets event gives it back. Frames wait in a queue per connection and connections
/// take turns, so one busy central cannot starve the others.
///
/// Update frames (notifications, indications) are counted: `completed` and `close` report how
/// many left the host, which is the transmit-queue room the GATT server's `updateValue` uses.
/// Pure: the caller sends the fragments `sendFragments` hands it.
public struct ACLScheduler: Sendable {
    public let buffers: ACLBufferSize

    public private(set) var freeBuffers: Int
    /// An L2CAP frame, cut into fragments as buffers free up.
    private struct QueuedFrame {
        let frame: L2CAPFrame
        /// Where the next fragment starts in the encoded frame.
        var offset = 0
        var isUpdate: Bool
    }
    /// One open connection's frames and fragments.
    private struct Link {
        let handle: UInt16
        var queue: [QueuedFrame] = []
        var inFlight = InFlightFragments()
    }
    /// The open connections in round-robin order. A list searched by handle, not a table keyed
    /// by it: a controller serves a handful of links, and every packet sent and completed looked
    /// its connection up several times, each time hashing the handle.
    private var links: [Link] = []
    private var nextTurn = 0

    public init(buffers: ACLBufferSize) {
        precondition(buffers.dataLength > 0 && buffers.packetCount > 0, "the controller has no ACL buffers")
        self.buffers = buffers
        freeBuffers = buffers.packetCount
    }

    private func index(of handle: UInt16) -> Int? {
        links.firstIndex { $0.handle == handle }
    }

    public mutating func open(_ handle: UInt16) {
        guard index(of: handle) == nil else { return }
        links.append(Link(handle: handle))
    }

    /// Forgets a disconnected connection and returns how many of its update frames were dropped.
    /// The buffers it held count as free again (the controller flushes them on disconnection,
    /// Vol 4 Part E 7.7.5).
    @discardableResult
    public mutating func close(_ handle: UInt16) -> Int {
        guard let index = index(of: handle) else { return 0 }
        let link = links.remove(at: index)
        freeBuffers += link.inFlight.count
        if nextTurn > index { nextTurn -= 1 }
        if nextTurn >= links.count { nextTurn = 0 }
        return link.inFlight.updateCount + link.queue.filter(\.isUpdate).count
    }

    /// Whether any connection has a frame (or the rest of one) waiting for a buffer.
    public var hasQueuedFrames: Bool {
        !links.allSatisfy { $0.queue.isEmpty }
    }

    /// Update frames queued or in the controller, over all connections.
    public var pendingUpdates: Int {
        links.reduce(0) { $0 + $1.inFlight.updateCount + $1.queue.filter(\.isUpdate).count }
    }

    /// Queues a frame; false for an unknown (closed) handle.
    @discardableResult
    public mutating func enqueue(_ frame: L2CAPFrame, on handle: UInt16, isUpdate: Bool = false) -> Bool {
        guard let index = index(of: handle) else { return false }
        links[index].queue.append(QueuedFrame(frame: frame, isUpdate: isUpdate))
        return true
    }

    /// Queues a frame and hands `send` every fragment that may go now: `enqueue`, then
    /// `sendFragments`. False for an unknown (closed) handle.
    ///
    /// With nothing queued on any connection, a frame of one fragment that its connection may
    /// send now goes to `send` without being queued: it is the only fragment `sendFragments`
    /// could hand on, and the turn moves past its connection as it would there. A notification
    /// is such a frame, and queueing it only to take it out again cost about 260 instructions
    /// (docs/performance.md).
    @discardableResult
    public mutating func submit<Failure: Error>(
        _ frame: L2CAPFrame, on handle: UInt16, isUpdate: Bool, send: (ACLFragment) throws(Failure) -> Void
    ) throws(Failure) -> Bool {
        guard let index = index(of: handle) else { return false }
        guard frame.encodedLength <= buffers.dataLength, freeBuffers > 0, !hasQueuedFrames,
            mayTakeBuffer(index, share: max(buffers.packetCount / links.count, 1))
        else {
            links[index].queue.append(QueuedFrame(frame: frame, isUpdate: isUpdate))
            try sendFragments(send)
            return true
        }
        freeBuffers -= 1
        nextTurn = index + 1
        links[index].inFlight.append(endsUpdate: isUpdate)
        try send(frame.fragment(from: 0, handle: handle, maxFragmentLength: buffers.dataLength))
        return true
    }

    /// Buffers given back by the controller; returns how many update frames are now fully
    /// delivered. Counts for unknown handles are ignored (the connection already closed and its
    /// buffers were reclaimed then); counts beyond what is in flight are capped.
    public mutating func completed(_ count: Int, on handle: UInt16) -> Int {
        guard let index = index(of: handle) else { return 0 }
        let returned = min(max(count, 0), links[index].inFlight.count)
        // In place: this runs for every completed packet.
        let delivered = links[index].inFlight.removeFirst(returned)
        freeBuffers = min(freeBuffers + returned, buffers.packetCount)
        return delivered
    }

    /// Hands `send` every fragment that may go to the controller now, in turn, each taking a
    /// buffer; stops at the first `send` that throws. Buffers are reserved: each connection is
    /// guaranteed its share (the buffers split evenly, at least one), and one beyond its share
    /// may only borrow buffers no other connection's unused share needs. So connections whose
    /// packets never complete — stalled centrals, however many — hold at most their shares, and
    /// the others keep theirs.
    ///
    /// Handed to a closure, not returned: a fragment returned as an optional was destroyed
    /// through its type's value witnesses, about 90 instructions each (docs/performance.md).
    public mutating func sendFragments<Failure: Error>(_ send: (ACLFragment) throws(Failure) -> Void) throws(Failure) {
        var idleTurns = 0
        // Worked out at the first frame waiting: a completed packet calls this with none waiting,
        // and the division would be most of its cost.
        var share = 0
        while freeBuffers > 0, !links.isEmpty, idleTurns < links.count {
            if nextTurn >= links.count { nextTurn = 0 }
            let index = nextTurn
            nextTurn += 1
            if share == 0, !links[index].queue.isEmpty { share = max(buffers.packetCount / links.count, 1) }
            guard !links[index].queue.isEmpty, mayTakeBuffer(index, share: share) else {
                idleTurns += 1
                continue
            }
            freeBuffers -= 1
            idleTurns = 0
            try send(takeFragment(of: index))
        }
    }

    /// The next fragment of the connection's first frame, recorded as in flight. Mutated in
    /// place (a copy of the queue taken out would be made for every packet).
    private mutating func takeFragment(of index: Int) -> ACLFragment {
        let fragment = links[index].queue[0].frame.fragment(
            from: links[index].queue[0].offset, handle: links[index].handle, maxFragmentLength: buffers.dataLength)
        links[index].queue[0].offset += fragment.count
        let frameDone = links[index].queue[0].offset == links[index].queue[0].frame.encodedLength
        links[index].inFlight.append(endsUpdate: frameDone && links[index].queue[0].isUpdate)
        // `remove(at:)`, not `removeFirst()`: that removes a range, destroying it generically.
        if frameDone { links[index].queue.remove(at: 0) }
        return fragment
    }

    /// Within its share, or borrowing only what no other connection's unused share needs.
    private func mayTakeBuffer(_ index: Int, share: Int) -> Bool {
        if links[index].inFlight.count < share { return true }
        var reservedForOthers = 0
        for other in links.indices where other != index {
            reservedForOthers += max(0, share - links[other].inFlight.count)
        }
        return freeBuffers > reservedForOthers
    }
}
