import LoopClock
import Notify
import TestHarness
import Testing
import Values

/// `currentValueOnSubscribe` (configuration `notify.on_subscribe`) on a virtual clock: a central
/// that subscribes is judged at once on the current value, as on a new one.
struct CurrentValueOnSubscribeTests {
    static func policy(
        minInterval: Duration = .zero, maxInterval: Duration? = nil,
        delta: NotifyPolicy.Delta? = nil, onSubscribe: Bool = true
    ) -> NotifyPolicy {
        NotifyPolicy(
            minInterval: minInterval, maxInterval: maxInterval, delta: delta, onChange: true,
            currentValueOnSubscribe: onSubscribe)
    }

    /// The current value goes at the subscription; on_change then counts from it, so the same
    /// value again is suppressed and the next change goes.
    @Test func aSubscriberGetsTheCurrentValueAtOnce() {
        var harness = Harness(policy: Self.policy())
        harness.update(21, at: .zero)
        harness.run(until: .seconds(5))
        harness.subscribe("A")
        harness.update(21, at: .seconds(6))
        harness.update(22, at: .seconds(7))
        #expect(harness.times() == [5000, 7000])
        #expect(harness.values() == [21, 22])
        #expect(harness.engine.statistics.perCentral["A"] == counters(sent: 2, suppressed: 1))
    }

    /// Off, a subscriber waits for the next value, which then goes whatever on_change says:
    /// nothing was sent to it yet.
    @Test func offASubscriberWaitsForTheNextValue() {
        var harness = Harness(policy: Self.policy(onSubscribe: false))
        harness.update(21, at: .zero)
        harness.run(until: .seconds(5))
        harness.subscribe("A")
        #expect(harness.sent.isEmpty)
        harness.update(21, at: .seconds(6))
        #expect(harness.times() == [6000])
    }

    /// Before the characteristic has a value there is nothing to send, and nothing is scheduled.
    @Test func withoutAValueNothingIsSent() {
        var harness = Harness(policy: Self.policy(maxInterval: .seconds(1)))
        harness.subscribe("A")
        #expect(harness.sent.isEmpty)
        #expect(harness.engine.nextDeadline == nil)
        harness.update(20, at: .seconds(3))
        #expect(harness.times() == [3000])
    }

    /// delta does not hold back the current value (nothing was sent to compare with) and then
    /// counts from it.
    @Test func deltaCountsFromTheCurrentValue() {
        var harness = Harness(policy: Self.policy(delta: .absolute(1)))
        harness.update(20, at: .zero)
        harness.subscribe("A")
        for (index, value) in [20.5, 21.0].enumerated() {
            harness.update(value, at: .milliseconds(100 * (index + 1)))
        }
        #expect(harness.values() == [20, 21])
        #expect(harness.engine.statistics.perCentral["A"]?.suppressed == 1)
    }

    /// min_interval counts per subscription from its own last emission: a new subscriber gets the
    /// current value at once, even while another central's interval runs, and its next value
    /// waits for its own interval.
    @Test func minIntervalCountsFromTheCurrentValue() {
        var harness = Harness(policy: Self.policy(minInterval: .seconds(1)))
        harness.subscribe("B")
        harness.update(20, at: .seconds(10))
        harness.run(until: .milliseconds(10_500))
        harness.subscribe("A")
        harness.update(21, at: .milliseconds(10_700))
        harness.run(until: .seconds(12))
        #expect(harness.times("B") == [10_000, 11_000])
        #expect(harness.values("B") == [20, 21])
        #expect(harness.times("A") == [10_500, 11_500])
        #expect(harness.values("A") == [20, 21])
    }

    /// The heartbeat counts from the current value sent at the subscription.
    @Test func theHeartbeatCountsFromTheCurrentValue() {
        var harness = Harness(policy: Self.policy(maxInterval: .seconds(1)))
        harness.update(5, at: .zero)
        harness.run(until: .milliseconds(300))
        harness.subscribe("A")
        harness.run(until: .milliseconds(2500))
        #expect(harness.times() == [300, 1300, 2300])
        #expect(harness.values() == [5, 5, 5])
    }

    /// A central that subscribes again after unsubscribing starts afresh: the current value again.
    @Test func aResubscriptionGetsTheCurrentValueAgain() {
        var harness = Harness(policy: Self.policy())
        harness.update(20, at: .zero)
        harness.subscribe("A")
        harness.engine.unsubscribe("A", from: "temp")
        harness.run(until: .seconds(1))
        harness.subscribe("A")
        #expect(harness.times() == [0, 1000])
        #expect(harness.values() == [20, 20])
    }

    /// A central that enabled indications gets the current value as an indication.
    @Test func anIndicationSubscriberGetsItAsAnIndication() throws {
        var engine = NotifyEngine<String, String>()
        engine.configure("temp", policy: Self.policy())
        let sample = try NotifySample(.number(20), encoding: EnvironmentalSensingCharacteristic.temperature.encoding)
        engine.update("temp", sample: sample, now: .zero)
        engine.subscribe("A", to: "temp", kind: .indication, current: sample, now: .seconds(1))
        let next = engine.nextTransmission(for: "A")
        let transmission = try #require(next)
        #expect(transmission.kind == .indication)
        #expect(transmission.sample == sample)
    }

    /// A central's triggers judge the current value like any value: refused (and counted as
    /// suppressed) when they do not hold, sent when they do.
    @Test func triggersJudgeTheCurrentValue() {
        var harness = Harness(policy: Self.policy())
        harness.update(20, at: .zero)
        harness.engine.setTriggers(
            TriggerSet([.compare(.greaterThan, reference: .number(25))]), for: "A", on: "temp", now: .zero)
        harness.engine.setTriggers(
            TriggerSet([.compare(.greaterThan, reference: .number(15))]), for: "B", on: "temp", now: .zero)
        harness.subscribe("A")
        harness.subscribe("B")
        #expect(harness.values("A").isEmpty)
        #expect(harness.engine.statistics.perCentral["A"]?.suppressed == 1)
        #expect(harness.values("B") == [20])
    }

    /// A per-central policy decides for that central: here it turns the current value off.
    @Test func aPerCentralOverrideDecidesForItsCentral() {
        var harness = Harness(policy: Self.policy())
        harness.update(20, at: .zero)
        harness.engine.override(Self.policy(onSubscribe: false), for: "B", on: "temp")
        harness.subscribe("A")
        harness.subscribe("B")
        #expect(harness.values("A") == [20])
        #expect(harness.values("B").isEmpty)
    }

    private func counters(sent: Int, suppressed: Int) -> NotifyCounters {
        var counters = NotifyCounters()
        counters.sent = sent
        counters.suppressed = suppressed
        return counters
    }
}
