import LoopClock
import Notify
import TestHarness
import Testing
import Values

/// The notify policy on a virtual clock: exact output sequences.
struct NotifyPolicyTests {
    /// 100 Hz input (values 0...99, one per 10 ms) under min_interval 250 ms: one notification
    /// per 250 ms, each the newest value at that instant, and the final value delivered.
    @Test func minIntervalSendsTheNewestValueOncePerInterval() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .milliseconds(250)))
        harness.subscribe("A")
        for index in 0..<100 {
            harness.update(Double(index), at: .milliseconds(10 * index))
        }
        harness.run(until: .seconds(2))
        #expect(harness.times() == [0, 250, 500, 750, 1000])
        #expect(harness.values() == [0, 24, 49, 74, 99])
        let counters = harness.engine.statistics.perCharacteristic["temp"]
        #expect(counters?.sent == 5)
        #expect(counters?.coalesced == 95)
        #expect(counters?.suppressed == 0)
        #expect(harness.engine.nextDeadline == nil)
    }

    /// The last value of a burst arrives when the interval ends, even with no later input.
    @Test func lastValueOfABurstIsDelivered() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .seconds(1)))
        harness.subscribe("A")
        for index in 0..<10 {
            harness.update(Double(index), at: .milliseconds(5 * index))
        }
        #expect(harness.engine.nextDeadline == .seconds(1))
        harness.run(until: .seconds(5))
        #expect(harness.times() == [0, 1000])
        #expect(harness.values() == [0, 9])
    }

    /// A value after a quiet period longer than min_interval goes at once.
    @Test func valueAfterQuietPeriodGoesImmediately() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .milliseconds(500)))
        harness.subscribe("A")
        harness.update(1, at: .zero)
        harness.update(2, at: .milliseconds(700))
        harness.update(3, at: .milliseconds(800))
        harness.run(until: .seconds(3))
        #expect(harness.times() == [0, 700, 1200])
        #expect(harness.values() == [1, 2, 3])
    }

    /// max_interval resends the current value when nothing was sent for that long.
    @Test func maxIntervalResendsUnchangedValue() {
        var harness = Harness(policy: NotifyPolicy(maxInterval: .seconds(1), onChange: true))
        harness.subscribe("A")
        harness.update(5, at: .zero)
        harness.update(5, at: .milliseconds(300))  // unchanged: not sent
        harness.update(6, at: .milliseconds(1500))  // changed: sent, heartbeat restarts
        harness.run(until: .milliseconds(3600))
        #expect(harness.times() == [0, 1000, 1500, 2500, 3500])
        #expect(harness.values() == [5, 5, 6, 6, 6])
        #expect(harness.engine.nextDeadline == .milliseconds(4500))
    }

    /// A stale value (its sensor stopped answering) is not resent by the heartbeat, nor offered to
    /// a new subscription; the next value restarts both.
    @Test func aStaleValueGetsNoHeartbeat() {
        var harness = Harness(policy: NotifyPolicy(maxInterval: .seconds(1)))
        harness.subscribe("A")
        harness.update(5, at: .zero)
        harness.run(until: .milliseconds(1500))
        harness.engine.markStale("temp")
        harness.run(until: .seconds(5))
        #expect(harness.times() == [0, 1000], "no heartbeat after the value went stale")
        harness.subscribe("B")
        harness.drain()
        #expect(harness.values("B").isEmpty, "a stale value is not offered on subscribing")
        harness.update(7, at: .seconds(6))
        harness.run(until: .milliseconds(7500))
        #expect(harness.times() == [0, 1000, 6000, 7000])
        #expect(harness.values() == [5, 5, 7, 7])
    }

    /// No heartbeat before the first value exists.
    @Test func noHeartbeatWithoutAValue() {
        var harness = Harness(policy: NotifyPolicy(maxInterval: .seconds(1)))
        harness.subscribe("A")
        #expect(harness.engine.nextDeadline == nil)
        harness.run(until: .seconds(10))
        #expect(harness.sent.isEmpty)
    }

    /// delta (absolute): only changes of at least 0.5 from the last value sent.
    @Test func absoluteDeltaSuppressesSmallChanges() {
        var harness = Harness(policy: NotifyPolicy(delta: .absolute(0.5)))
        harness.subscribe("A")
        for (index, value) in [20.0, 20.2, 20.4, 20.5, 20.9, 21.0, 20.6, 20.4].enumerated() {
            harness.update(value, at: .milliseconds(100 * index))
        }
        #expect(harness.values() == [20.0, 20.5, 21.0, 20.4])
        #expect(harness.engine.statistics.perCentral["A"]?.suppressed == 4)
    }

    /// delta (percent of the last value sent).
    @Test func percentDeltaSuppressesSmallChanges() {
        var harness = Harness(policy: NotifyPolicy(delta: .percent(10)))
        harness.subscribe("A")
        for (index, value) in [100.0, 105, 109, 110, 120, 121, 0, 0, 0.01].enumerated() {
            harness.update(value, at: .milliseconds(100 * index))
        }
        #expect(harness.values() == [100, 110, 121, 0, 0.01])
    }

    /// on_change: a value whose bytes equal the last one sent is not sent (25.001 and 25.0
    /// are the same sint16 at 0.01 °C).
    @Test func onChangeSuppressesRepeats() {
        var harness = Harness(policy: NotifyPolicy(onChange: true))
        harness.subscribe("A")
        for (index, value) in [25.0, 25.0, 25.001, 25.01, 25.01, 25.0].enumerated() {
            harness.update(value, at: .milliseconds(100 * index))
        }
        #expect(harness.values() == [25.0, 25.01, 25.0])
    }

    /// Without on_change every value goes, repeats included.
    @Test func immediatePolicySendsEverything() {
        var harness = Harness()
        harness.subscribe("A")
        for index in 0..<5 { harness.update(7, at: .milliseconds(index)) }
        #expect(harness.values() == [7, 7, 7, 7, 7])
    }

    /// delta with a min_interval: a held value that no longer differs enough is not sent.
    @Test func heldValueIsJudgedAgainWhenTheIntervalEnds() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .seconds(1), delta: .absolute(1)))
        harness.subscribe("A")
        harness.update(10, at: .zero)
        harness.update(12, at: .milliseconds(100))  // held
        harness.update(10.5, at: .milliseconds(200))  // replaces it; only 0.5 from 10
        harness.run(until: .seconds(3))
        #expect(harness.values() == [10])
        let counters = harness.engine.statistics.perCentral["A"]
        #expect(counters?.coalesced == 1)
        #expect(counters?.suppressed == 1)
    }

    /// A per-central override replaces the characteristic's policy for that central only.
    @Test func perCentralOverride() {
        var harness = Harness(policy: NotifyPolicy(minInterval: .seconds(1)))
        harness.subscribe("A")
        harness.subscribe("B")
        harness.engine.override(.immediate, for: "B", on: "temp")
        for index in 0..<4 { harness.update(Double(index), at: .milliseconds(100 * index)) }
        harness.run(until: .seconds(2))
        #expect(harness.values("A") == [0, 3])
        #expect(harness.values("B") == [0, 1, 2, 3])
    }

    /// Zero intervals mean "none": they never make the engine spin.
    @Test func zeroIntervalsScheduleNothing() {
        #expect(NotifyPolicy(maxInterval: .zero).maxInterval == nil)
        #expect(NotifyPolicy(minInterval: .seconds(2), maxInterval: .seconds(1)).maxInterval == .seconds(2))
        var harness = Harness(policy: NotifyPolicy(maxInterval: .zero))
        harness.engine.setTriggers(
            TriggerSet([.fixedTimeInterval(seconds: 0), .valueChanged], logic: .or),
            for: "A", on: "temp", now: .zero)
        harness.subscribe("A")
        harness.update(1, at: .zero)
        #expect(harness.engine.nextDeadline == nil)
        #expect(harness.values() == [1])
    }
}
