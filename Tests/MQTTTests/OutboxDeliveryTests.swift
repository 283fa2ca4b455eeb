import Foundation
import StateFile
import TestHarness
import Testing

@testable import MQTTMirror
@testable import MQTTService

/// `OutboxDelivery`: an acknowledgement takes exactly the entry its message id carried off the
/// outbox, on the connection that sent it only; a refusal is reported and still taken off.
@Suite struct OutboxDeliveryTests {
    let writer = StateFileWriter()

    func delivery() throws -> OutboxDelivery {
        OutboxDelivery(outbox: try MQTTOutbox(directory: try temporaryDirectory("delivery"), writer: writer, logger: testLogger))
    }

    @Test func anAcknowledgementTakesItsOwnEntryOffTheOutbox() throws {
        var delivery = try delivery()
        let first = try delivery.outbox.append(MQTTMessage(topic: "t", text: "1"))
        let second = try delivery.outbox.append(MQTTMessage(topic: "t", text: "2"))
        delivery.sent(first, as: 7)
        delivery.sent(second, as: 8)
        let refusedOf8 = try delivery.delivered(8, reasonCode: 0)
        #expect(refusedOf8 == nil)
        #expect(delivery.outbox.pending.map(\.sequence) == [first.sequence])
        let refusedOf99 = try delivery.delivered(99, reasonCode: 0)
        #expect(refusedOf99 == nil, "not an outbox message")
        #expect(delivery.outbox.count == 1)
        let refusedOf7 = try delivery.delivered(7, reasonCode: 0)
        #expect(refusedOf7 == nil)
        #expect(delivery.outbox.count == 0)
        #expect(delivery.awaiting == 0)
        #expect(delivery.refused == 0)
    }

    /// MQTT 5 reason codes from 0x80 are refusals (0x80 unspecified error, 0x97 quota exceeded);
    /// below, successes (0x10: no matching subscribers).
    @Test(arguments: [(Int32(0x80), true), (0x97, true), (0x10, false), (0x7F, false)])
    func aRefusedEntryIsReportedCountedAndNotRetried(reasonCode: Int32, isRefusal: Bool) throws {
        var delivery = try delivery()
        let entry = try delivery.outbox.append(MQTTMessage(topic: "t", text: "too big"))
        delivery.sent(entry, as: 1)
        let refused = try delivery.delivered(1, reasonCode: reasonCode)
        #expect(refused == (isRefusal ? entry : nil))
        #expect(delivery.refused == (isRefusal ? 1 : 0))
        #expect(delivery.outbox.count == 0, "taken off the outbox either way")
    }

    @Test func aNewConnectionForgetsTheOldOnesMessageIDs() throws {
        var delivery = try delivery()
        let entry = try delivery.outbox.append(MQTTMessage(topic: "t", text: "1"))
        delivery.sent(entry, as: 1)
        delivery.connectionChanged()
        let refusedOfOld = try delivery.delivered(1, reasonCode: 0)
        #expect(refusedOfOld == nil, "message 1 of the next connection is another")
        #expect(delivery.outbox.pending.map(\.sequence) == [entry.sequence], "still to deliver on the next connection")
    }
}
