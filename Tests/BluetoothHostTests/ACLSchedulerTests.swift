import BluetoothHCI
import BluetoothL2CAP
import TestHarness
import Testing

@testable import BluetoothHost

extension ACLScheduler {
    /// Every fragment that may go now, as the transmitter sends them in one flush.
    mutating func takeSendable() -> [HCIACLPacket] {
        var packets: [HCIACLPacket] = []
        sendFragments { packets.append($0.packet) }
        return packets
    }
}

// Swift Testing's #expect cannot call mutating methods, so results are taken first.
struct ACLSchedulerTests {
    static let buffers = ACLBufferSize(dataLength: 27, packetCount: 3)

    @Test func sendsNoMoreFragmentsThanTheControllerHasBuffers() {
        var scheduler = ACLScheduler(buffers: Self.buffers)
        scheduler.open(1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 0, count: 100)), on: 1)
        let first = scheduler.takeSendable()
        let none = scheduler.takeSendable()
        let delivered = scheduler.completed(2, on: 1)
        let second = scheduler.takeSendable()
        #expect(first.count == 3)
        #expect(none.isEmpty)
        #expect(delivered == 0)
        #expect(second.count == 1)  // 104 bytes are 4 fragments of at most 27
        #expect((first + second).flatMap(\.data).count == 104)
        #expect(scheduler.freeBuffers == 1)
    }

    @Test func connectionsTakeTurns() {
        var scheduler = ACLScheduler(buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
        scheduler.open(1)
        scheduler.open(2)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 1, count: 200)), on: 1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [2]), on: 2)
        let sent = scheduler.takeSendable()
        // Two buffers each; connection 1 may not borrow the one connection 2 still has reserved,
        // and goes on as its own buffers come back.
        #expect(sent.map(\.handle) == [1, 2, 1])
        #expect(scheduler.completed(1, on: 1) == 0)
        #expect(scheduler.takeSendable().map(\.handle) == [1])
    }

    /// Three connections of eight stall (their packets never complete) with frames queued: they
    /// hold one buffer each, their share, and the five others keep getting through every round.
    @Test func anyNumberOfStalledConnectionsLeaveTheOthersTheirShare() {
        var scheduler = ACLScheduler(buffers: ACLBufferSize(dataLength: 27, packetCount: 8))
        for handle: UInt16 in 1...8 { scheduler.open(handle) }
        for stalled: UInt16 in 1...3 {
            for _ in 0..<10 { scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: stalled, isUpdate: true) }
        }
        let first = scheduler.takeSendable()
        #expect(first.map(\.handle).sorted() == [1, 2, 3], "one each, nothing borrowed")
        for round in 0..<5 {
            for healthy: UInt16 in 4...8 { scheduler.enqueue(L2CAPFrame(channel: 4, payload: [2]), on: healthy, isUpdate: true) }
            #expect(scheduler.takeSendable().map(\.handle).sorted() == [4, 5, 6, 7, 8], "round \(round)")
            for healthy: UInt16 in 4...8 { #expect(scheduler.completed(1, on: healthy) == 1) }
        }
    }

    /// A connection whose packets never complete (a stalled central) holds at most all buffers
    /// but one per other connection: the others still get through.
    @Test func aStalledConnectionLeavesABufferForEachOther() {
        var scheduler = ACLScheduler(buffers: ACLBufferSize(dataLength: 27, packetCount: 4))
        for handle: UInt16 in 1...3 { scheduler.open(handle) }
        for _ in 0..<10 { scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1, isUpdate: true) }
        #expect(scheduler.takeSendable().map(\.handle) == [1, 1])
        for round in 0..<3 {
            scheduler.enqueue(L2CAPFrame(channel: 4, payload: [2]), on: 2, isUpdate: true)
            scheduler.enqueue(L2CAPFrame(channel: 4, payload: [3]), on: 3, isUpdate: true)
            #expect(scheduler.takeSendable().map(\.handle) == [2, 3], "round \(round)")
            #expect(scheduler.completed(1, on: 2) == 1)
            #expect(scheduler.completed(1, on: 3) == 1)
        }
        #expect(scheduler.takeSendable().isEmpty, "connection 1 stays at its two buffers")
    }

    @Test func anUpdateCountsAsDeliveredWhenItsLastFragmentCompletes() {
        var scheduler = ACLScheduler(buffers: ACLBufferSize(dataLength: 27, packetCount: 8))
        scheduler.open(1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 0, count: 40)), on: 1, isUpdate: true)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [2]), on: 1, isUpdate: true)
        #expect(scheduler.pendingUpdates == 2)
        let sent = scheduler.takeSendable()
        // Fragment 1 of the 44-byte update, its last fragment, the response, the second update
        // (the count of 5 is capped at the one fragment still in flight).
        let delivered = [1, 1, 1, 5].map { scheduler.completed($0, on: 1) }
        #expect(sent.count == 4)
        #expect(delivered == [0, 1, 0, 1])
        #expect(scheduler.pendingUpdates == 0)
        #expect(scheduler.freeBuffers == 8)
    }

    @Test func closingReclaimsBuffersReturnsUpdatesAndIgnoresLateCredits() {
        var scheduler = ACLScheduler(buffers: Self.buffers)
        scheduler.open(1)
        scheduler.open(2)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 0, count: 60)), on: 1, isUpdate: true)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1, isUpdate: true)
        let sent = scheduler.takeSendable()
        let dropped = scheduler.close(1)
        let freeAfterClose = scheduler.freeBuffers
        let late = scheduler.completed(3, on: 1)
        let acceptedAfterClose = scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 2)
        let others = scheduler.takeSendable()
        #expect(sent.count == 2, "one of the 3 buffers stays for connection 2")
        #expect(dropped == 2)
        #expect(freeAfterClose == 3)
        #expect(late == 0)
        #expect(scheduler.freeBuffers == 2)
        #expect(!acceptedAfterClose)
        #expect(others.map(\.handle) == [2])
    }

    /// A notification with nothing queued goes out at once, in flight like any fragment: it
    /// takes a buffer, and its completion delivers it.
    @Test func aFrameSubmittedWithNothingQueuedGoesOutAtOnce() {
        var scheduler = ACLScheduler(buffers: Self.buffers)
        scheduler.open(1)
        var sent: [HCIACLPacket] = []
        let accepted = scheduler.submit(L2CAPFrame(channel: 4, payload: [0x1B, 0x03, 0x00, 0x01]), on: 1, isUpdate: true) {
            sent.append($0.packet)
        }
        let unknown = scheduler.submit(L2CAPFrame(channel: 4, payload: [1]), on: 9, isUpdate: true) { sent.append($0.packet) }
        #expect(accepted && !unknown)
        #expect(sent.map(\.data) == [[0x04, 0x00, 0x04, 0x00, 0x1B, 0x03, 0x00, 0x01]])
        #expect(sent.map(\.boundary) == [.firstNonFlushable])
        #expect(scheduler.freeBuffers == 2)
        #expect(scheduler.pendingUpdates == 1)
        #expect(scheduler.completed(1, on: 1) == 1)
    }

    /// A frame sent at once takes its connection's turn, as one queued and sent would: when
    /// buffers come back, the connection after it goes first.
    @Test func aFrameSentAtOnceTakesItsConnectionsTurn() {
        var scheduler = ACLScheduler(buffers: ACLBufferSize(dataLength: 27, packetCount: 1))
        for handle: UInt16 in 1...3 { scheduler.open(handle) }
        var sent: [UInt16] = []
        for handle: UInt16 in [1, 1, 2] {
            scheduler.submit(L2CAPFrame(channel: 4, payload: [UInt8(handle)]), on: handle, isUpdate: true) {
                sent.append($0.handle)
            }
        }
        #expect(sent == [1], "one buffer: the first frame goes at once, the others wait")
        #expect(scheduler.completed(1, on: 1) == 1)
        scheduler.sendFragments { sent.append($0.handle) }
        #expect(sent == [1, 2], "connection 2's turn comes before connection 1's second")
    }

    /// `submit` is `enqueue` then `sendFragments`, whatever came before: the same fragments in the
    /// same order, the same deliveries, drops and free buffers, over long random runs of
    /// connections opening and closing, frames of one and of several fragments, stalled and
    /// completing links, for controllers of one to eight buffers.
    @Test(arguments: [(27, 1), (27, 3), (27, 8), (251, 2), (251, 4)])
    func submittingIsQueueingThenSending(dataLength: Int, packetCount: Int) {
        let buffers = ACLBufferSize(dataLength: dataLength, packetCount: packetCount)
        var submitting = ACLScheduler(buffers: buffers)
        var queueing = ACLScheduler(buffers: buffers)
        var viaSubmit: [HCIACLPacket] = []
        var viaQueue: [HCIACLPacket] = []
        var random = SplitMix64(seed: UInt64(dataLength * 31 + packetCount))
        for step in 0..<20_000 {
            let handle = UInt16(random.next(below: 4) + 1)
            switch random.next(below: 100) {
            case 0..<5:
                submitting.open(handle)
                queueing.open(handle)
            case 5..<8:
                #expect(submitting.close(handle) == queueing.close(handle), "step \(step)")
                submitting.sendFragments { viaSubmit.append($0.packet) }
                queueing.sendFragments { viaQueue.append($0.packet) }
            case 8..<48:
                let count = random.next(below: 4)
                #expect(submitting.completed(count, on: handle) == queueing.completed(count, on: handle), "step \(step)")
                submitting.sendFragments { viaSubmit.append($0.packet) }
                queueing.sendFragments { viaQueue.append($0.packet) }
            default:
                // Mostly a notification's size, now and then one of several fragments.
                let length = random.next(below: 4) == 0 ? random.next(below: 600) : random.next(below: 20)
                let frame = L2CAPFrame(channel: 4, payload: (0..<length).map { UInt8(truncatingIfNeeded: $0 + step) })
                let isUpdate = random.next(below: 3) != 0
                let submitted = submitting.submit(frame, on: handle, isUpdate: isUpdate) { viaSubmit.append($0.packet) }
                let queued = queueing.enqueue(frame, on: handle, isUpdate: isUpdate)
                queueing.sendFragments { viaQueue.append($0.packet) }
                #expect(submitted == queued, "step \(step)")
            }
            #expect(submitting.freeBuffers == queueing.freeBuffers, "step \(step)")
            #expect(submitting.pendingUpdates == queueing.pendingUpdates, "step \(step)")
        }
        #expect(viaSubmit.count > 200, "the run sends")
        // Where they part, not both lists: a run sends thousands of fragments.
        let firstDifference = viaSubmit.indices.first { $0 >= viaQueue.count || viaSubmit[$0] != viaQueue[$0] }
        #expect(
            firstDifference == nil && viaSubmit.count == viaQueue.count,
            "the fragments sent differ from fragment \(firstDifference ?? viaQueue.count) on")
    }
}
