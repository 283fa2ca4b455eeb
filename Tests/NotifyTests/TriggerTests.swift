import LoopClock
import Notify
import TestHarness
import Testing
import Values

/// ES Trigger Setting conditions written by a central, driving the same engine.
struct TriggerTests {
    /// The temperature sequence every condition test feeds, one value per 100 ms.
    static let inputs: [Double] = [19.0, 20.0, 20.0, 21.0, 19.5, 20.0]

    static func run(
        _ triggers: TriggerSet, policy: NotifyPolicy = .immediate,
        inputs: [Double] = TriggerTests.inputs, until: LoopInstant = .seconds(1)
    ) -> Harness {
        var harness = Harness(policy: policy)
        harness.engine.setTriggers(triggers, for: "A", on: "temp", now: .zero)
        harness.subscribe("A")
        for (index, value) in inputs.enumerated() {
            harness.update(value, at: .milliseconds(100 * index))
        }
        harness.run(until: until)
        return harness
    }

    /// Each value condition (0x03...0x09) against reference 20 °C: sent exactly while it holds.
    @Test(arguments: [
        (ESTriggerSetting.valueChanged, [19.0, 20.0, 21.0, 19.5, 20.0]),
        (.compare(.lessThan, reference: .number(20)), [19.0, 19.5]),
        (.compare(.lessThanOrEqual, reference: .number(20)), [19.0, 20.0, 20.0, 19.5, 20.0]),
        (.compare(.greaterThan, reference: .number(20)), [21.0]),
        (.compare(.greaterThanOrEqual, reference: .number(20)), [20.0, 20.0, 21.0, 20.0]),
        (.compare(.equal, reference: .number(20)), [20.0, 20.0, 20.0]),
        (.compare(.notEqual, reference: .number(20)), [19.0, 21.0, 19.5])
    ])
    func valueConditions(setting: ESTriggerSetting, expected: [Double]) {
        #expect(Self.run(TriggerSet([setting])).values() == expected)
    }

    /// 0x00: inactive — nothing at all, heartbeats included.
    @Test func inactiveSendsNothing() {
        let harness = Self.run(
            TriggerSet([.inactive]), policy: NotifyPolicy(maxInterval: .milliseconds(200)),
            until: .seconds(5))
        #expect(harness.sent.isEmpty)
        #expect(harness.engine.nextDeadline == nil)
    }

    /// 0x01: fixed time interval — the newest value at every tick, none in between.
    @Test func fixedTimeInterval() {
        let harness = Self.run(TriggerSet([.fixedTimeInterval(seconds: 1)]), until: .milliseconds(3500))
        #expect(harness.times() == [1000, 2000, 3000])
        #expect(harness.values() == [20.0, 20.0, 20.0])
        #expect(harness.engine.nextDeadline == .seconds(4))
    }

    /// 0x02: no less than a time interval — values, but at least that far apart, the newest.
    @Test func noLessThanTimeInterval() {
        let inputs = (0..<25).map(Double.init)  // 0...24, every 100 ms
        let harness = Self.run(
            TriggerSet([.noLessThanTimeInterval(seconds: 1)]), inputs: inputs,
            until: .seconds(5))
        #expect(harness.times() == [0, 1000, 2000, 3000])
        // Each interval ends before that instant's input arrives, so it carries the one before.
        #expect(harness.values() == [0, 9, 19, 24])
    }

    /// AND: values above 20, at most one per second.
    @Test func andCombinesConditions() {
        let inputs: [Double] = [21, 22, 19, 23, 18, 18, 18, 18, 18, 18, 18, 25]
        let harness = Self.run(
            TriggerSet(
                [.noLessThanTimeInterval(seconds: 1), .compare(.greaterThan, reference: .number(20))],
                logic: .and),
            inputs: inputs, until: .seconds(3))
        // 22 and 23 wait for the interval but are superseded by 19 and 18, which fail the test.
        #expect(harness.times() == [0, 1100])
        #expect(harness.values() == [21, 25])
    }

    /// OR: every tick, plus any value above 20 at once.
    @Test func orCombinesConditions() {
        let harness = Self.run(
            TriggerSet(
                [.fixedTimeInterval(seconds: 1), .compare(.greaterThan, reference: .number(20))],
                logic: .or),
            until: .milliseconds(2500))
        #expect(harness.times() == [300, 1000, 2000])
        #expect(harness.values() == [21, 20, 20])
    }

    /// The configured min_interval stays a floor under a central's triggers.
    @Test func configuredMinIntervalIsAFloor() {
        let inputs = (0..<10).map(Double.init)
        let harness = Self.run(
            TriggerSet([.valueChanged]), policy: NotifyPolicy(minInterval: .milliseconds(450)),
            inputs: inputs, until: .seconds(2))
        #expect(harness.times() == [0, 450, 900, 1350])
        #expect(harness.values() == [0, 4, 8, 9])
    }

    /// Removing the triggers returns the central to the characteristic's policy.
    @Test func removingTriggersRestoresThePolicy() {
        var harness = Harness()
        harness.engine.setTriggers(TriggerSet([.inactive]), for: "A", on: "temp", now: .zero)
        harness.subscribe("A")
        harness.update(1, at: .zero)
        harness.engine.setTriggers(nil, for: "A", on: "temp", now: .milliseconds(50))
        harness.update(2, at: .milliseconds(100))
        #expect(harness.values() == [2])
        #expect(harness.engine.triggers(for: "A", on: "temp") == nil)
    }

    /// A central's triggers are its own: another central keeps the configured policy.
    @Test func triggersArePerCentral() {
        var harness = Harness()
        harness.engine.setTriggers(
            TriggerSet([.compare(.greaterThan, reference: .number(20))]),
            for: "A", on: "temp", now: .zero)
        harness.subscribe("A")
        harness.subscribe("B")
        for (index, value) in Self.inputs.enumerated() {
            harness.update(value, at: .milliseconds(100 * index))
        }
        #expect(harness.values("A") == [21])
        #expect(harness.values("B") == Self.inputs)
    }

    /// The full path: a central's descriptor writes parsed, then fed to the engine.
    @Test func writesFromTheAirFeedTheEngine() throws {
        let encoding = EnvironmentalSensingCharacteristic.temperature.encoding
        let setting = try ESTriggerSetting(descriptorValue: [0x06, 0xD0, 0x07], encoding: encoding)
        let logic = try TriggerLogic(descriptorValue: [0x00])
        let harness = Self.run(TriggerSet([setting], logic: logic))
        #expect(harness.values() == [21])
    }
}
