import LoopClock
import Notify
import TestHarness
import Testing
import Values

/// A virtual-clock driver for the engine, doing what the runtime does: after every call it
/// drains each central's link (unless the test stalls it), and it wakes exactly at each
/// `nextDeadline`, never polling. Every transmission is logged with its virtual time.
struct Harness {
    struct Sent: Equatable, CustomStringConvertible {
        let central: String
        let characteristic: String
        let milliseconds: Int
        let value: Double

        var description: String { "\(central)/\(characteristic)@\(milliseconds)ms=\(value)" }
    }

    var engine = NotifyEngine<String, String>()
    /// The current values, as the gateway's store keeps them: the engine keeps none.
    var current: [String: NotifySample] = [:]
    var now: LoopInstant = .zero
    var sent: [Sent] = []
    var centrals: [String] = []
    /// Centrals whose link takes nothing (no credits).
    var stalled: Set<String> = []
    let encoding = EnvironmentalSensingCharacteristic.temperature.encoding

    init(policy: NotifyPolicy = .immediate, characteristics: [String] = ["temp"]) {
        for characteristic in characteristics {
            engine.configure(characteristic, policy: policy)
        }
    }

    mutating func subscribe(
        _ central: String, to characteristic: String = "temp",
        kind: UpdateKind = .notification
    ) {
        if !centrals.contains(central) { centrals.append(central) }
        engine.subscribe(central, to: characteristic, kind: kind, current: current[characteristic], now: now)
        drain()
    }

    /// Runs every deadline up to `time`, each at its own instant, as one timer per deadline would.
    mutating func run(until time: LoopInstant) {
        while let deadline = engine.nextDeadline, deadline <= time {
            #expect(deadline >= now, "deadline \(deadline) lies in the past (now \(now))")
            now = deadline
            engine.advance(to: deadline) { [current] in current[$0] }
            drain()
        }
        now = time
    }

    mutating func update(_ value: Double, at time: LoopInstant, characteristic: String = "temp") {
        run(until: time)
        let sample = try! NotifySample(.number(value), encoding: encoding)
        current[characteristic] = sample
        engine.update(characteristic, sample: sample, now: time)
        drain()
    }

    mutating func drain() {
        for central in centrals where !stalled.contains(central) {
            while let transmission = engine.nextTransmission(for: central) {
                record(transmission)
            }
        }
    }

    mutating func record(_ transmission: Transmission<String, String>) {
        sent.append(
            Sent(
                central: transmission.central, characteristic: transmission.characteristic,
                milliseconds: Int((now - .zero) / .milliseconds(1)),
                value: transmission.sample.value.numericValue ?? .nan))
    }

    func times(_ central: String = "A") -> [Int] {
        sent.filter { $0.central == central }.map(\.milliseconds)
    }

    func values(_ central: String = "A") -> [Double] {
        sent.filter { $0.central == central }.map(\.value)
    }
}
