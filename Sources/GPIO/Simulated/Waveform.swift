import EventLoop

/// The level of one simulated line over time, produced lazily as the simulator's clock advances.
struct Waveform {
    /// One level change.
    struct Transition: Equatable {
        var time: UInt64
        var level: Bool
    }

    /// A repeating (or single) pattern of level changes, at offsets in ns from a cycle's start.
    private struct Pattern {
        var changes: [(offset: Double, level: Bool)]
        var cycleNs: Double
        var repeats: Bool
    }

    private var pattern: Pattern?
    private let origin: UInt64
    private var cycle = 0
    private var index = 0
    /// Transitions scheduled by reactive generators (DHT answer, HC-SR04 echo), in time order,
    /// from `nextScheduled` on: those before it are taken. Taken by moving the index, not by
    /// removing the first element, which shifted the rest (a DHT frame is 84 transitions); the
    /// array is emptied once all are taken.
    private var scheduled: [Transition] = []
    private var nextScheduled = 0
    private(set) var level: Bool
    /// Whether a generator drives the line at all (otherwise it floats and follows the bias).
    let driven: Bool

    init(_ generator: SignalGenerator?, origin: UInt64) {
        self.origin = origin
        driven = generator != nil
        switch generator {
        case nil:
            level = false
        case .constant(let value):
            level = value
        case .square(let period, let duty) where duty <= 0 || duty >= 1 || period <= .zero:
            level = duty >= 1  // degenerate: a constant level
        case .square(let period, let duty):
            let cycleNs = Double(period.nanoseconds)
            level = true
            pattern = Pattern(changes: [(0, true), (cycleNs * duty, false)], cycleNs: cycleNs, repeats: true)
        case .pulses(let perSecond, _) where perSecond <= 0:
            level = false
        case .pulses(let perSecond, let width):
            let cycleNs = 1e9 / perSecond
            level = true
            pattern = Pattern(
                changes: [(0, true), (max(1, min(Double(width.nanoseconds), cycleNs / 2)), false)],
                cycleNs: cycleNs, repeats: true)
        case .steps(let steps, let repeats):
            var offset = 0.0
            var changes: [(Double, Bool)] = []
            for step in steps {
                changes.append((offset, step.level))
                offset += Double(step.duration.nanoseconds)
            }
            level = steps.first?.level ?? false
            pattern = Pattern(changes: changes, cycleNs: offset, repeats: repeats && offset > 0)
        case .dht22, .dht11:
            level = true  // the bus idles high through its pull-up
        case .hcsr04, .socket:
            level = false
        }
        if pattern != nil { index = 1 }  // the first change is the initial level
    }

    private func time(ofCycle cycle: Int, index: Int) -> UInt64? {
        guard let pattern, index < pattern.changes.count else { return nil }
        return origin + UInt64((Double(cycle) * pattern.cycleNs + pattern.changes[index].offset).rounded())
    }

    /// The next pattern change at or after the cursor, normalising the cursor across cycles.
    private mutating func nextPatternChange() -> Transition? {
        guard let pattern else { return nil }
        if index >= pattern.changes.count {
            guard pattern.repeats else { return nil }
            cycle += 1
            index = 0
        }
        guard let time = time(ofCycle: cycle, index: index) else { return nil }
        return Transition(time: time, level: pattern.changes[index].level)
    }

    /// When the level may next change, if ever.
    mutating func nextChangeTime() -> UInt64? {
        let fromPattern = nextPatternChange()?.time
        let fromSchedule = firstScheduled?.time
        switch (fromPattern, fromSchedule) {
        case (let a?, let b?): return min(a, b)
        case (let a, let b): return a ?? b
        }
    }

    /// Advances to the next level change at or before `time` (only actual changes), nil when
    /// there is none until then. One change per call: a process that was not scheduled for a
    /// while catches up on a fast line change by change, where collecting the changes first
    /// would cost memory in proportion to the wait.
    mutating func nextChange(through time: UInt64) -> Transition? {
        while true {
            let fromPattern = nextPatternChange()
            let fromSchedule = firstScheduled
            let next: Transition
            if let p = fromPattern, p.time <= time, fromSchedule.map({ p.time <= $0.time }) ?? true {
                next = p
                index += 1
            } else if let s = fromSchedule, s.time <= time {
                next = s
                takeFirstScheduled()
            } else {
                return nil
            }
            if next.level != level {
                level = next.level
                return next
            }
        }
    }

    private var firstScheduled: Transition? {
        nextScheduled < scheduled.count ? scheduled[nextScheduled] : nil
    }

    private mutating func takeFirstScheduled() {
        nextScheduled += 1
        if nextScheduled == scheduled.count {
            scheduled.removeAllKeepingStorage()
            nextScheduled = 0
        }
    }

    /// A level received from outside (a socket-driven line's), now: whether it changed the level.
    mutating func receive(_ level: Bool) -> Bool {
        guard level != self.level else { return false }
        self.level = level
        return true
    }

    /// Adds reactive transitions (all later than anything already produced).
    mutating func schedule(_ transitions: [Transition]) {
        scheduled.removeFirst(nextScheduled)
        nextScheduled = 0
        scheduled.append(contentsOf: transitions)
        scheduled.sort { $0.time < $1.time }
    }
}

/// The waveforms of simulated sensors that answer the host.
enum SensorWaveforms {
    /// The DHT answer to a start signal released at `release`: response low 80 µs, high 80 µs,
    /// 40 bits of (low 50 µs, high 26 µs for 0 or 70 µs for 1), a final 50 µs low, then idle high.
    static func dhtFrame(bytes: [UInt8], release: UInt64) -> [Waveform.Transition] {
        var t = release + 30_000
        var out: [Waveform.Transition] = [.init(time: t, level: false)]
        t += 80_000
        out.append(.init(time: t, level: true))
        t += 80_000
        out.append(.init(time: t, level: false))
        for byte in bytes {
            for bit in (0..<8).reversed() {
                t += 50_000
                out.append(.init(time: t, level: true))
                t += (byte >> UInt8(bit)) & 1 == 1 ? 70_000 : 26_000
                out.append(.init(time: t, level: false))
            }
        }
        t += 50_000
        out.append(.init(time: t, level: true))
        return out
    }

    /// The five bytes a DHT22 sends: humidity ×10, temperature ×10 with a sign bit, checksum.
    static func dht22Bytes(humidity: Double, temperature: Double, corruptChecksum: Bool) -> [UInt8] {
        let h = UInt16(clamping: Int((humidity * 10).rounded()))
        let tAbs = UInt16(clamping: Int((abs(temperature) * 10).rounded())) & 0x7FFF
        let t = temperature < 0 ? tAbs | 0x8000 : tAbs
        return withChecksum(
            [UInt8(h >> 8), UInt8(h & 0xFF), UInt8(t >> 8), UInt8(t & 0xFF)],
            corrupt: corruptChecksum)
    }

    /// The five bytes a DHT11 sends: integer and tenth parts of humidity and temperature.
    static func dht11Bytes(humidity: Double, temperature: Double, corruptChecksum: Bool) -> [UInt8] {
        func parts(_ v: Double) -> (UInt8, UInt8) {
            let tenths = Int((abs(v) * 10).rounded())
            return (UInt8(clamping: tenths / 10), UInt8(tenths % 10))
        }
        let (hi, hd) = parts(humidity)
        let (ti, td) = parts(temperature)
        return withChecksum([hi, hd, ti, temperature < 0 ? td | 0x80 : td], corrupt: corruptChecksum)
    }

    private static func withChecksum(_ data: [UInt8], corrupt: Bool) -> [UInt8] {
        let sum = data.reduce(UInt8(0), &+)
        return data + [corrupt ? sum &+ 1 : sum]
    }

    /// The HC-SR04 echo for a trigger pulse that ended at `triggerEnd`.
    static func echo(distanceMeters: Double, triggerEnd: UInt64) -> [Waveform.Transition] {
        guard distanceMeters > 0, distanceMeters <= SimulatedSensorTiming.hcsr04MaximumDistance else { return [] }
        let rise = triggerEnd + SimulatedSensorTiming.hcsr04EchoDelayNs
        let width = UInt64((2 * distanceMeters / SimulatedSensorTiming.speedOfSound * 1e9).rounded())
        return [.init(time: rise, level: true), .init(time: rise + width, level: false)]
    }
}
