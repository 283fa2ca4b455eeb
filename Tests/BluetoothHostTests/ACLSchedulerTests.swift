import BluetoothHCI
import BluetoothL2CAP
import Testing

@testable import BluetoothHost

struct ACLSchedulerTests {
    static let buffers = ACLBufferSize(dataLength: 27, packetCount: 3)

    @Test func sendsNoMoreFragmentsThanTheControllerHasBuffers() {
        var scheduler = ACLScheduler(buffers: Self.buffers)
        scheduler.open(1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 0, count: 100)), on: 1)
        let first = scheduler.takeSendable()
        #expect(first.count == 3)
        #expect(scheduler.takeSendable().isEmpty)
        #expect(scheduler.completed(2, on: 1) == 0)
        let second = scheduler.takeSendable()
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
        #expect(scheduler.takeSendable().map(\.handle) == [1, 2, 1, 1])
    }

    @Test func anUpdateCountsAsDeliveredWhenItsLastFragmentCompletes() {
        var scheduler = ACLScheduler(buffers: ACLBufferSize(dataLength: 27, packetCount: 8))
        scheduler.open(1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 0, count: 40)), on: 1, isUpdate: true)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [2]), on: 1, isUpdate: true)
        #expect(scheduler.pendingUpdates == 2)
        #expect(scheduler.takeSendable().count == 4)
        #expect(scheduler.completed(1, on: 1) == 0)  // first fragment of the 44-byte frame
        #expect(scheduler.completed(1, on: 1) == 1)  // its last fragment
        #expect(scheduler.completed(1, on: 1) == 0)  // the response
        #expect(scheduler.completed(5, on: 1) == 1)  // capped at what is in flight
        #expect(scheduler.pendingUpdates == 0)
        #expect(scheduler.freeBuffers == 8)
    }

    @Test func closingReclaimsBuffersReturnsUpdatesAndIgnoresLateCredits() {
        var scheduler = ACLScheduler(buffers: Self.buffers)
        scheduler.open(1)
        scheduler.open(2)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: Array(repeating: 0, count: 60)), on: 1, isUpdate: true)
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1, isUpdate: true)
        #expect(scheduler.takeSendable().count == 3)
        #expect(scheduler.close(1) == 2)
        #expect(scheduler.freeBuffers == 3)
        #expect(scheduler.completed(3, on: 1) == 0)
        #expect(scheduler.freeBuffers == 3)
        #expect(!scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 1))
        scheduler.enqueue(L2CAPFrame(channel: 4, payload: [1]), on: 2)
        #expect(scheduler.takeSendable().map(\.handle) == [2])
    }
}
