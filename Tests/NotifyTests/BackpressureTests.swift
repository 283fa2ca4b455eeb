import LoopClock
import Notify
import TestHarness
import Testing
import Values

/// The link stage: one slot per (central, characteristic) holding the newest value.
struct BackpressureTests {
    /// A central whose link takes nothing changes neither what nor when another central
    /// receives.
    @Test func stalledCentralDelaysNoOther() {
        var alone = Harness(policy: NotifyPolicy(minInterval: .milliseconds(500)))
        alone.subscribe("A")
        var shared = Harness(policy: NotifyPolicy(minInterval: .milliseconds(500)))
        shared.subscribe("A")
        shared.subscribe("B")
        shared.stalled = ["B"]
        // 10 kHz for 2 s of virtual time.
        for index in 0..<20_000 {
            let time = LoopInstant.microseconds(100 * index)
            alone.update(Double(index % 3000) / 10, at: time)
            shared.update(Double(index % 3000) / 10, at: time)
        }
        alone.run(until: .seconds(3))
        shared.run(until: .seconds(3))
        #expect(alone.times("A") == [0, 500, 1000, 1500, 2000])
        #expect(shared.times("A") == alone.times("A"))
        #expect(shared.values("A") == alone.values("A"))
        #expect(shared.values("B").isEmpty)

        // When B's link frees up it gets the newest value only, once.
        shared.stalled = []
        shared.drain()
        #expect(shared.values("B") == [Double(19_999 % 3000) / 10])
    }

    /// 100,000 updates to a stalled central: one value waits, every other one was coalesced.
    @Test func stalledCentralStaysBounded() {
        var engine = NotifyEngine<String, String>()
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("B", to: "temp", kind: .notification, current: nil, now: .zero)
        var deliveredToA = 0
        for index in 0..<100_000 {
            let sample = NotifySample(value: .number(Double(index)), bytes: [UInt8(truncatingIfNeeded: index)])
            engine.update("temp", sample: sample, now: .microseconds(100 * index))
            if engine.nextTransmission(for: "A") != nil { deliveredToA += 1 }
        }
        #expect(deliveredToA == 100_000)
        let statistics = engine.statistics
        #expect(statistics.valuesWaiting == 1)
        #expect(statistics.perCentral["A"]?.sent == 100_000)
        #expect(statistics.perCentral["B"]?.sent == 0)
        #expect(statistics.perCentral["B"]?.coalesced == 99_999)
        #expect(engine.nextTransmission(for: "B")?.sample.value == .number(99_999))
    }

    /// The slot replaces its value: a stalled link that resumes gets the newest value.
    @Test func slotKeepsOnlyTheNewestValue() {
        var harness = Harness()
        harness.subscribe("A")
        harness.stalled = ["A"]
        for index in 0..<5 { harness.update(Double(index), at: .milliseconds(index)) }
        harness.stalled = []
        harness.drain()
        #expect(harness.values() == [4])
        let counters = harness.engine.statistics.perCharacteristic["temp"]
        #expect(counters?.sent == 1)
        #expect(counters?.coalesced == 4)
    }

    /// Per central, slots are served oldest first across characteristics.
    @Test func slotsAreServedInOrderOfReadiness() {
        var harness = Harness(characteristics: ["temp", "hum"])
        harness.subscribe("A", to: "temp")
        harness.subscribe("A", to: "hum")
        harness.stalled = ["A"]
        harness.update(1, at: .zero, characteristic: "hum")
        harness.update(2, at: .milliseconds(1), characteristic: "temp")
        harness.update(3, at: .milliseconds(2), characteristic: "hum")
        harness.stalled = []
        harness.drain()
        #expect(harness.sent.map(\.characteristic) == ["hum", "temp"])
        #expect(harness.values() == [3, 2])
    }

    /// One indication outstanding per central; notifications are not held back by it.
    @Test func indicationsAreSerialisedPerCentral() {
        var engine = NotifyEngine<String, String>()
        engine.subscribe("A", to: "alarm", kind: .indication, current: nil, now: .zero)
        engine.subscribe("A", to: "door", kind: .indication, current: nil, now: .zero)
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("B", to: "alarm", kind: .indication, current: nil, now: .zero)
        let sample = NotifySample(value: .bool(true), bytes: [1])
        engine.update("alarm", sample: sample, now: .zero)
        engine.update("door", sample: sample, now: .zero)
        engine.update("temp", sample: sample, now: .zero)

        #expect(engine.nextTransmission(for: "A")?.characteristic == "alarm")
        // "door" waits for the confirmation; "temp" is a notification and goes.
        #expect(engine.nextTransmission(for: "A")?.characteristic == "temp")
        #expect(engine.nextTransmission(for: "A") == nil)
        // Another central's indication is independent.
        #expect(engine.nextTransmission(for: "B")?.characteristic == "alarm")

        engine.indicationConfirmed(by: "A")
        let door = engine.nextTransmission(for: "A")
        #expect(door?.characteristic == "door")
        #expect(door?.kind == .indication)
        #expect(engine.nextTransmission(for: "A") == nil)
    }

    /// Values still waiting when a subscription ends are counted as dropped.
    @Test func unsubscribeAndDisconnectDropWaitingValues() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .seconds(1)), characteristics: ["temp", "hum"])
        harness.subscribe("A", to: "temp")
        harness.subscribe("A", to: "hum")
        harness.stalled = ["A"]
        harness.update(1, at: .zero)  // waits in the slot
        harness.update(2, at: .milliseconds(10))  // held for the interval
        harness.update(3, at: .milliseconds(20), characteristic: "hum")
        harness.engine.unsubscribe("A", from: "temp")
        #expect(harness.engine.statistics.perCharacteristic["temp"]?.dropped == 2)
        #expect(harness.engine.nextDeadline == nil)
        harness.engine.disconnect("A")
        #expect(harness.engine.statistics.perCharacteristic["hum"]?.dropped == 1)
        #expect(harness.engine.statistics.perCentral["A"] == nil)
        #expect(harness.engine.statistics.valuesWaiting == 0)
        #expect(harness.engine.nextTransmission(for: "A") == nil)
    }

    /// Centrals not subscribed get nothing; the driver learns who has something waiting.
    @Test func onlySubscribersReceive() {
        var engine = NotifyEngine<String, String>()
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.update("temp", sample: NotifySample(value: .number(1), bytes: [1]), now: .zero)
        var pending: [String] = []
        engine.collectCentralsWithPendingTransmissions(into: &pending)
        #expect(pending == ["A"])
        #expect(engine.nextTransmission(for: "B") == nil)
        #expect(engine.nextTransmission(for: "A")?.sample.bytes == [1])
        engine.collectCentralsWithPendingTransmissions(into: &pending)
        #expect(pending.isEmpty)
    }

    /// Once every subscription has ended the engine looks at no table; subscribed again (twice
    /// over too, a fresh start), a value finds its central and a held one its deadline.
    @Test func subscriptionsAfterTheLastOneEndedAreServed() {
        var engine = NotifyEngine<String, String>()
        engine.configure("temp", policy: NotifyPolicy(minInterval: .seconds(1)))
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.disconnect("A")
        #expect(engine.nextDeadline == nil)
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("B", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.unsubscribe("B", from: "temp")
        engine.update("temp", sample: NotifySample(value: .number(1), bytes: [1]), now: .zero)
        var pending: [String] = []
        engine.collectCentralsWithPendingTransmissions(into: &pending)
        #expect(pending == ["A"])
        #expect(engine.nextTransmission(for: "A")?.sample.bytes == [1])
        engine.update("temp", sample: NotifySample(value: .number(2), bytes: [2]), now: .milliseconds(10))
        #expect(engine.nextDeadline == .seconds(1))  // held for the interval
        engine.unsubscribe("A", from: "temp")
        #expect(engine.nextDeadline == nil)
        engine.collectCentralsWithPendingTransmissions(into: &pending)
        #expect(pending.isEmpty)
    }

    /// A characteristic a reload stopped serving: its subscribers and waiting value are gone,
    /// the others' stay, and configured again under the same key it starts without the old
    /// value (nothing sent on subscribe) or counters.
    @Test func aRemovedCharacteristicIsForgotten() {
        var engine = NotifyEngine<String, String>()
        engine.configure("temp", policy: NotifyPolicy(minInterval: .seconds(1)))
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("A", to: "hum", kind: .notification, current: nil, now: .zero)
        engine.update("temp", sample: NotifySample(value: .number(1), bytes: [1]), now: .zero)
        engine.update("hum", sample: NotifySample(value: .number(2), bytes: [2]), now: .zero)
        engine.remove("temp")
        #expect(engine.subscribers(of: "temp").isEmpty)
        #expect(engine.statistics.perCharacteristic["temp"] == nil)
        #expect(engine.nextTransmission(for: "A")?.sample.bytes == [2])
        #expect(engine.nextTransmission(for: "A") == nil, "the removed value waits no more")
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        #expect(engine.nextTransmission(for: "A") == nil, "no old value on subscribe")
        #expect(engine.subscribers(of: "temp") == ["A"])
    }

    /// Characteristics are found by key whether few (searched in a list) or many (in a table),
    /// also after a removal moved another into the removed one's place.
    @Test(arguments: [3, 20])
    func eachValueReachesItsOwnCharacteristicsSubscribersAfterARemoval(_ count: Int) {
        var engine = NotifyEngine<String, String>()
        let names = (0..<count).map { "c\($0)" }
        for name in names {
            engine.configure(name, policy: .immediate)
            engine.subscribe(name == "c1" ? "B" : "A", to: name, kind: .notification, current: nil, now: .zero)
        }
        engine.remove("c0")
        #expect(engine.subscribers(of: "c0").isEmpty)
        for (index, name) in names.enumerated().dropFirst() {
            engine.update(name, sample: NotifySample(value: .number(Double(index)), bytes: [UInt8(index)]), now: .zero)
            let central = name == "c1" ? "B" : "A"
            #expect(engine.subscribers(of: name) == [central])
            #expect(engine.nextTransmission(for: central)?.sample.bytes == [UInt8(index)], "\(name)")
        }
    }

    @Test func countersLogLine() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .seconds(1)))
        harness.subscribe("A")
        for index in 0..<3 { harness.update(Double(index), at: .milliseconds(index)) }
        #expect(
            harness.engine.statistics.logLine
                == "temp sent=1 coalesced=1 suppressed=0 dropped=0; central A sent=1 coalesced=1 suppressed=0 dropped=0; waiting=0")
    }

    /// Deadlines at the same instant fire in subscription order, so every run is the same.
    @Test func simultaneousDeadlinesFireInSubscriptionOrder() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .seconds(1)), characteristics: ["temp", "hum"])
        harness.subscribe("A", to: "temp")
        harness.subscribe("A", to: "hum")
        harness.update(1, at: .zero, characteristic: "temp")
        harness.update(2, at: .zero, characteristic: "hum")
        harness.update(3, at: .milliseconds(100), characteristic: "hum")
        harness.update(4, at: .milliseconds(100), characteristic: "temp")
        harness.run(until: .seconds(2))
        #expect(harness.sent.map(\.characteristic) == ["temp", "hum", "temp", "hum"])
        #expect(harness.times() == [0, 0, 1000, 1000])
        #expect(harness.values() == [1, 2, 4, 3])
    }
}

/// A value the link refused goes back to its slot, where a newer value replaces it: the link
/// never gets an older value after a newer one was produced.
struct RefusedTransmissionTests {
    static func sample(_ value: Double) -> NotifySample {
        NotifySample(value: .number(value), bytes: [UInt8(value)])
    }

    @Test func aRefusedValueIsReplacedByANewerOne() throws {
        var engine = NotifyEngine<String, String>()
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.update("temp", sample: Self.sample(1), now: .zero)
        let next = engine.nextTransmission(for: "A")
        let taken = try #require(next)
        // While the driver awaits the link, a newer value arrives; then the link refuses.
        engine.update("temp", sample: Self.sample(2), now: .milliseconds(1))
        engine.transmissionRefused(taken)
        #expect(engine.nextTransmission(for: "A")?.sample == Self.sample(2))
        #expect(engine.nextTransmission(for: "A") == nil, "1 never follows 2")
        let counters = engine.statistics.perCentral["A"]
        #expect(counters?.sent == 1)
        #expect(counters?.coalesced == 1)
    }

    @Test func aRefusedValueWithoutSuccessorWaitsFirstInLine() throws {
        var engine = NotifyEngine<String, String>()
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("A", to: "hum", kind: .notification, current: nil, now: .zero)
        engine.update("temp", sample: Self.sample(1), now: .zero)
        engine.update("hum", sample: Self.sample(50), now: .zero)
        let next = engine.nextTransmission(for: "A")
        let taken = try #require(next)
        #expect(taken.characteristic == "temp")
        engine.transmissionRefused(taken)
        #expect(engine.statistics.valuesWaiting == 2)
        #expect(engine.nextTransmission(for: "A")?.characteristic == "temp")
        #expect(engine.nextTransmission(for: "A")?.characteristic == "hum")
        #expect(engine.statistics.perCentral["A"]?.sent == 2)
    }

    @Test func aRefusedValueOfAnEndedSubscriptionIsDropped() throws {
        var engine = NotifyEngine<String, String>()
        engine.subscribe("A", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.subscribe("B", to: "temp", kind: .notification, current: nil, now: .zero)
        engine.update("temp", sample: Self.sample(1), now: .zero)
        let next = engine.nextTransmission(for: "A")
        let taken = try #require(next)
        engine.unsubscribe("A", from: "temp")
        engine.transmissionRefused(taken)
        #expect(engine.nextTransmission(for: "A") == nil)
        let counters = engine.statistics.perCharacteristic["temp"]
        #expect(counters?.sent == 0)
        #expect(counters?.dropped == 1)
    }
}
