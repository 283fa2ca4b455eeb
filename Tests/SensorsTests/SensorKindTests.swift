import Foundation
import GPIO
import StateFile
import TestHarness
import Testing

@testable import Sensors

/// Every sensor kind decoded from simulated waveforms on the virtual clock.
@Suite struct SensorKindTests {
    static let start: UInt64 = 1_000_000_000

    /// A simulator with one chip of the given lines, and a driver running the sensors on it.
    func drive(
        _ lines: [SimulatedLineConfig], _ sensors: [SensorSpec],
        maxStep: Duration = .milliseconds(1), writer: StateFileWriter = StateFileWriter()
    ) throws -> (SimulatedBackend, SimulatedSensorDriver, [SensorSample]) {
        let sim = SimulatedBackend(chips: [SimulatedChipConfig(label: "sensors", lines: lines)], startNs: Self.start)
        let driver = try SimulatedSensorDriver(backend: sim, sensors: sensors, stateWriter: writer, maxStep: maxStep)
        return (sim, driver, try driver.start())
    }

    func seconds(_ value: SensorSample) -> Double { Double(value.timestampNs - Self.start) / 1e9 }

    // MARK: binary

    @Test func binaryFollowsTheLine() throws {
        let door = SimulatedLineConfig(
            name: "DOOR",
            generator: .steps(
                [
                    .init(false, .seconds(1)), .init(true, .seconds(2)), .init(false, .seconds(10))
                ], repeats: false))
        let (_, driver, initial) = try drive([door], [SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOOR")))])
        let values = initial + driver.run(for: .seconds(5))
        #expect(values.map(\.bool) == [false, true, false])
        #expect(values.map(seconds) == [0, 1, 3])
    }

    @Test func binaryHoldTimeKeepsAPIROnAfterItsLastTrigger() throws {
        // Motion pulses at 1 s and 3 s, each 0.2 s; hold 5 s from the last one.
        let pir = SimulatedLineConfig(
            name: "PIR",
            generator: .steps(
                [
                    .init(false, .seconds(1)), .init(true, .milliseconds(200)), .init(false, .milliseconds(1_800)),
                    .init(true, .milliseconds(200)), .init(false, .seconds(60))
                ], repeats: false))
        let spec = SensorSpec(name: "pir", kind: BinarySettings(line: LineSelector("PIR"), holdTime: .seconds(5)))
        let (_, driver, initial) = try drive([pir], [spec])
        let values = initial + driver.run(for: .seconds(10))
        #expect(values.map(\.bool) == [false, true, false])
        #expect(values.map(seconds) == [0, 1, 8])
    }

    @Test func binaryFiltersInvertDebounceAndDelay() throws {
        // A bouncing button press at 1 s held 3 s; inverted, debounced, reported on after 0.5 s.
        let button = SimulatedLineConfig(
            name: "BTN",
            generator: .steps(
                [
                    .init(true, .seconds(1)), .init(false, .milliseconds(2)), .init(true, .milliseconds(1)),
                    .init(false, .seconds(3)), .init(true, .seconds(10))
                ], repeats: false))
        let spec = SensorSpec(
            name: "button", kind: BinarySettings(line: LineSelector("BTN")),
            filters: [.invert, .debounce(.milliseconds(10)), .delayedOn(.milliseconds(500))])
        let (_, driver, initial) = try drive([button], [spec])
        let values = initial + driver.run(for: .seconds(6))
        #expect(values.map(\.bool) == [false, true, false])
        let pressSettled = 1.003 + 0.010
        #expect(abs(seconds(values[1]) - (pressSettled + 0.5)) < 1e-9)
        #expect(abs(seconds(values[2]) - (4.003 + 0.010)) < 1e-9)
    }

    // MARK: counter

    @Test func counterTotalIsPersistedAcrossRestarts() throws {
        let directory = try temporaryDirectory("counter").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let meter = SimulatedLineConfig(name: "METER", generator: .pulses(perSecond: 100, width: .milliseconds(1)))
        let spec = SensorSpec(name: "water", kind: CounterSettings(line: LineSelector("METER"), stateDirectory: directory))

        let (_, first, initial) = try drive([meter], [spec])
        #expect(initial.map(\.number) == [0])
        let values = first.run(for: .milliseconds(10_005))
        #expect(values.last?.number == 1_000)  // pulses at 10 ms … 10 s
        first.stop()
        #expect(try String(contentsOfFile: directory + "/water.count", encoding: .utf8) == "1000\n")

        let (_, second, restored) = try drive([meter], [spec])
        #expect(restored.map(\.number) == [1_000])
        #expect(second.run(for: .milliseconds(1_005)).last?.number == 1_100)
        second.stop()
    }

    @Test func aCorruptCounterFileIsAClearError() throws {
        let directory = try temporaryDirectory("counter").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "12x\n".write(toFile: directory + "/water.count", atomically: true, encoding: .utf8)
        let spec = SensorSpec(name: "water", kind: CounterSettings(line: LineSelector("METER"), stateDirectory: directory))
        #expect(throws: SensorError.stateFile(path: directory + "/water.count", message: "not a count: \"12x\"")) {
            _ = try drive([SimulatedLineConfig(name: "METER")], [spec])
        }
    }

    @Test func aCounterTotalThatCannotBeSavedIsNotReportedUntilItIsSaved() throws {
        let directory = try temporaryDirectory("counter").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Five pulses in the first half second, then none: the retries owe nothing to new pulses.
        var steps: [SignalGenerator.Step] = []
        for _ in 0..<5 { steps += [.init(false, .milliseconds(90)), .init(true, .milliseconds(10))] }
        let meter = SimulatedLineConfig(
            name: "METER", generator: .steps(steps + [.init(false, .seconds(60))], repeats: false))
        let spec = SensorSpec(name: "water", kind: CounterSettings(line: LineSelector("METER"), stateDirectory: directory))
        let (_, driver, initial) = try drive([meter], [spec])
        #expect(initial.map(\.number) == [0])
        // A file where the state directory was: no save can succeed, not even as root.
        func breakDirectory() throws {
            try FileManager.default.removeItem(atPath: directory)
            try "not a directory\n".write(toFile: directory, atomically: false, encoding: .utf8)
        }
        try breakDirectory()

        let unsaved = driver.run(for: .milliseconds(12_500))
        let failures = unsaved.compactMap { value -> (Double, String)? in
            guard case .failure(.notSaved(let message)) = value.reading else { return nil }
            return (seconds(value), message)
        }
        #expect(failures.map(\.0) == [1, 11])  // the report due a second after the start, then every 10 s
        #expect(failures.allSatisfy { $0.1.contains(directory + "/water.count") })
        #expect(
            failures.allSatisfy {
                $0.1.hasSuffix("the total (5) is kept in memory, reported once saved, and saved again in 10.0 seconds")
            })
        #expect(!unsaved.contains { $0.number != nil }, "a total that is not saved is not reported")

        try FileManager.default.removeItem(atPath: directory)  // the state file makes its directory
        let saved = driver.run(for: .seconds(10))
        #expect(!saved.contains { if case .failure = $0.reading { true } else { false } })
        #expect(saved.compactMap(\.number) == [5], "reported once saved")
        #expect(try String(contentsOfFile: directory + "/water.count", encoding: .utf8) == "5\n")
        #expect(driver.stop().isEmpty, "nothing unsaved: nothing to write as it stops")
    }

    /// The guarantee behind `total_increasing`: whenever a total is reported, the file holds at
    /// least it, so a counter killed at any moment (no stop, no last save: SIGKILL, a power cut)
    /// starts again from at least the last total anybody was told.
    @Test func aReportedTotalIsNeverAheadOfTheSavedOne() throws {
        let directory = try temporaryDirectory("counter").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let meter = SimulatedLineConfig(name: "METER", generator: .pulses(perSecond: 37, width: .milliseconds(1)))
        let spec = SensorSpec(name: "water", kind: CounterSettings(line: LineSelector("METER"), stateDirectory: directory))
        func savedTotal() throws -> Double {
            Double(try String(contentsOfFile: directory + "/water.count", encoding: .utf8).dropLast()) ?? -1
        }
        var lastReported = 0.0
        for run in 0..<3 {
            let (_, driver, restored) = try drive([meter], [spec])
            #expect((restored.first?.number ?? -1) >= lastReported, "run \(run) starts below what was reported")
            for _ in 0..<(25 + run * 7) {
                for value in driver.run(for: .milliseconds(173)) {
                    guard let total = value.number else { continue }
                    #expect(total <= (try savedTotal()), "reported \(total) before saving it")
                    lastReported = total
                }
            }
            #expect(lastReported > 0)
            // Killed: the driver is dropped without stop(), so nothing more is saved.
        }
    }

    @Test func lostEventsAreReportedAndStillCounted() throws {
        // 2,000 pulses per second read only every second through a 64-event buffer.
        let meter = SimulatedLineConfig(name: "METER", generator: .pulses(perSecond: 2_000, width: .microseconds(100)))
        let spec = SensorSpec(name: "fast", kind: CounterSettings(line: LineSelector("METER")))
        let (_, driver, _) = try drive([meter], [spec], maxStep: .seconds(1))
        let values = driver.run(for: .milliseconds(3_000) + .microseconds(250))
        let lost = values.filter { $0.channel == "lost_events" }.compactMap(\.number)
        #expect(lost == [1_936, 3_872, 5_808])
        #expect(values.last { $0.channel == "value" }?.number == 6_000)
    }

    // MARK: rate

    @Test(arguments: [1.0, 3.0, 10.0, 97.0, 1_000.0, 2_500.0, 5_000.0])
    func rateIsWithinOnePercent(hertz: Double) throws {
        let line = SimulatedLineConfig(name: "FLOW", generator: .pulses(perSecond: hertz, width: .microseconds(50)))
        let spec = SensorSpec(name: "flow", kind: RateSettings(line: LineSelector("FLOW")))
        let (_, driver, _) = try drive([line], [spec], maxStep: .milliseconds(10))
        let values = driver.run(for: .seconds(12))
        let rates = values.filter { $0.channel == "value" && $0.timestampNs >= Self.start + 3_000_000_000 }.compactMap(\.number)
        #expect(!rates.isEmpty)
        for rate in rates { #expect(abs(rate - hertz) / hertz < 0.01, "\(rate) vs \(hertz)") }
    }

    @Test func rateScalesPerMinuteAndDecaysWhenThePulsesStop() throws {
        // 5 pulses per second for 4 s, then nothing; 0.5 l per pulse, reported per minute.
        let steps: [SignalGenerator.Step] =
            Array(
                repeating: [
                    SignalGenerator.Step(true, .milliseconds(10)),
                    SignalGenerator.Step(false, .milliseconds(190))
                ], count: 20
            ).flatMap { $0 }
            + [SignalGenerator.Step(false, .seconds(100))]
        let line = SimulatedLineConfig(name: "FLOW", generator: .steps(steps, repeats: false))
        let spec = SensorSpec(
            name: "flow",
            kind:
                RateSettings(
                    line: LineSelector("FLOW"), per: .minute,
                    window: .seconds(2), scale: 0.5))
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(8))
        #expect(values[2].number.map { abs($0 - 150) < 0.01 } == true)  // 5/s × 60 × 0.5
        #expect(values.last?.number == 0)
    }

    @Test func movingAverageOffsetAndScaleApplyInOrder() throws {
        let line = SimulatedLineConfig(
            name: "FLOW",
            generator: .steps(
                [.init(true, .milliseconds(1)), .init(false, .milliseconds(99))], repeats: true))
        let spec = SensorSpec(
            name: "flow", kind: RateSettings(line: LineSelector("FLOW"), window: .seconds(1)),
            filters: [.scale(2), .offset(1), .movingAverage(2)])
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(3)).compactMap(\.number)
        #expect(values.count == 3)
        #expect(abs(values[2] - 21) < 1e-6)  // 10/s × 2 + 1
    }

    // MARK: pulse width

    @Test func pulseWidthReportsHighTimeAndDutyCycle() throws {
        let line = SimulatedLineConfig(name: "PWM", generator: .square(period: .milliseconds(10), duty: 0.3))
        let spec = SensorSpec(name: "pwm", kind: PulseWidthSettings(line: LineSelector("PWM")))
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(2))
        let high = values.filter { $0.channel == "high_time" }.compactMap(\.number)
        let duty = values.filter { $0.channel == "duty_cycle" }.compactMap(\.number)
        #expect(high.count == 2 && duty.count == 2)
        #expect(high.allSatisfy { abs($0 - 0.003) < 1e-9 })
        #expect(duty.allSatisfy { abs($0 - 30) < 1e-6 })
    }

    // MARK: distance

    @Test(arguments: [0.03, 0.25, 1.234, 2.0, 3.9])
    func hcsr04DistanceIsWithinOnePercent(meters: Double) throws {
        let lines = [
            SimulatedLineConfig(name: "TRIG"),
            SimulatedLineConfig(name: "ECHO", generator: .hcsr04(trigger: "TRIG", distanceMeters: meters))
        ]
        let spec = SensorSpec(name: "tank", kind: DistanceSettings(trigger: LineSelector("TRIG"), echo: LineSelector("ECHO")))
        let (_, driver, _) = try drive(lines, [spec])
        let values = driver.run(for: .milliseconds(3_500))
        #expect(values.count == 4)
        for value in values {
            let measured = try #require(value.number)
            #expect(abs(measured - meters) / meters < 0.01, "\(measured) vs \(meters)")
        }
    }

    @Test func hcsr04WithoutEchoReportsATimeout() throws {
        let lines = [
            SimulatedLineConfig(name: "TRIG"),
            SimulatedLineConfig(name: "ECHO", generator: .hcsr04(trigger: "TRIG", distanceMeters: 6))
        ]
        let spec = SensorSpec(name: "tank", kind: DistanceSettings(trigger: LineSelector("TRIG"), echo: LineSelector("ECHO")))
        let (_, driver, _) = try drive(lines, [spec])
        let values = driver.run(for: .milliseconds(1_500))
        #expect(values.map(\.reading) == [.failure(.timeout), .failure(.timeout)])
        #expect(values.map { $0.timestampNs - Self.start } == [40_010_000, 1_040_010_000])
    }

    // MARK: DHT

    @Test(arguments: [(55.3, 21.7), (99.9, -12.7), (0.0, 80.0)])
    func dht22DecodesTemperatureAndHumidity(humidity: Double, temperature: Double) throws {
        let line = SimulatedLineConfig(name: "DHT", generator: .dht22(humidity: humidity, temperature: temperature))
        let spec = SensorSpec(name: "climate", kind: DHTSettings(model: .dht22, line: LineSelector("DHT")))
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(1))
        #expect(values.map(\.channel) == ["temperature", "humidity"])
        #expect(values.map(\.number) == [temperature, humidity])
    }

    /// The edges an input sees after a start signal to a simulated DHT22.
    func dhtAnswer(_ generator: SignalGenerator) throws -> [EdgeEvent] {
        let sim = SimulatedBackend(chips: [
            SimulatedChipConfig(
                label: "dht",
                lines: [
                    SimulatedLineConfig(name: "DHT", generator: generator)
                ])
        ])
        let start = try sim.requestOutput(LineSelector("DHT"), consumer: "t", settings: OutputSettings(initialValue: false))
        sim.advance(by: .microseconds(1_100))
        start.release()
        let input = try sim.requestInput(
            LineSelector("DHT"), consumer: "t",
            settings: InputSettings(bias: .pullUp, edges: .both, eventBufferSize: 256),
            onReadable: {})
        sim.advance(by: .milliseconds(10))
        return try input.readEvents().events
    }

    @Test func dht22FrameBytesAreDecodedFromEdgeTimestamps() throws {
        let edges = try dhtAnswer(.dht22(humidity: 65.2, temperature: -10.1))
        #expect(edges.count == 84)
        // 65.2 % = 0x028C, -10.1 °C = 0x8065 (sign bit), checksum 0x73.
        #expect(
            DHTFrame.decode(edges: edges, model: .dht22)
                == .success(DHTFrame(bytes: [0x02, 0x8C, 0x80, 0x65, 0x73], humidity: 65.2, temperature: -10.1)))
    }

    @Test func dht22ChecksumFailureIsReportedNotDecoded() throws {
        let line = SimulatedLineConfig(name: "DHT", generator: .dht22(humidity: 40, temperature: 20, corruptChecksum: true))
        let spec = SensorSpec(name: "climate", kind: DHTSettings(model: .dht22, line: LineSelector("DHT")))
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(1))
        // 40.0 % = 0x0190, 20.0 °C = 0x00C8, sum 0x59, sent as 0x5A.
        #expect(values.map(\.reading) == Array(repeating: .failure(.checksumMismatch(bytes: [0x01, 0x90, 0x00, 0xC8, 0x5A])), count: 2))
    }

    /// A DHT silent from 4 s to 24 s, read every 5 s: the reads at 5, 10 and 15 s get no answer,
    /// so at 15 s (three intervals without a good reading) it is unavailable, saying why; the
    /// read at 25 s answers and brings it back, before its values.
    @Test func aDHTThatStopsAnsweringIsUnavailableUntilItsNextGoodReading() throws {
        let silence = SignalGenerator.Silence(after: .seconds(4), duration: .seconds(20))
        let line = SimulatedLineConfig(name: "DHT", generator: .dht22(humidity: 40, temperature: 20, silence: silence))
        let spec = SensorSpec(
            name: "climate", kind: DHTSettings(model: .dht22, line: LineSelector("DHT"), interval: .seconds(5)))
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(40))
        let availability = values.filter { $0.channel == SensorSample.availabilityChannel }
        #expect(availability.count == 2, "\(availability)")
        guard availability.count == 2, case .failure(.unavailable(let why)) = availability[0].reading else {
            Issue.record("not unavailable: \(availability)")
            return
        }
        #expect(why.hasPrefix("no good reading for 15 s (last: "), "\(why)")
        #expect(availability[1].reading == .bool(true))
        #expect((15.0..<15.1).contains(seconds(availability[0])), "\(seconds(availability[0]))")
        #expect((25.0..<25.1).contains(seconds(availability[1])), "\(seconds(availability[1]))")
        let back = try #require(values.firstIndex { $0.reading == .bool(true) && $0.channel == SensorSample.availabilityChannel })
        #expect(values[back + 1].number == 20, "available again before the value that brought it back")
    }

    /// An edge-driven sensor may be quiet for days: silence alone never makes it unavailable.
    @Test func aQuietContactStaysAvailable() throws {
        let door = SimulatedLineConfig(name: "DOOR", generator: .constant(true))
        let (_, driver, _) = try drive([door], [SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOOR")))])
        #expect(driver.run(for: .seconds(600)).allSatisfy { $0.channel != SensorSample.availabilityChannel })
    }

    @Test func dhtIsReadAtMostEveryTwoSeconds() throws {
        let line = SimulatedLineConfig(name: "DHT", generator: .dht22(humidity: 40, temperature: 20))
        let spec = SensorSpec(
            name: "climate", kind: DHTSettings(model: .dht22, line: LineSelector("DHT"), interval: .milliseconds(500)))
        let (_, driver, _) = try drive([line], [spec])
        let reads = driver.run(for: .seconds(9)).filter { $0.channel == "temperature" }
        #expect(reads.count == 5)  // at 0, 2, 4, 6, 8 s
        #expect(zip(reads, reads.dropFirst()).allSatisfy { $1.timestampNs - $0.timestampNs == 2_000_000_000 })
    }

    @Test func dht11DecodesItsIntegerAndTenthBytes() throws {
        let line = SimulatedLineConfig(name: "DHT", generator: .dht11(humidity: 41, temperature: 23.4))
        let spec = SensorSpec(name: "climate", kind: DHTSettings(model: .dht11, line: LineSelector("DHT")))
        let (_, driver, _) = try drive([line], [spec])
        let values = driver.run(for: .seconds(1)).compactMap(\.number)
        #expect(values.count == 2)
        #expect(abs(values[0] - 23.4) < 1e-9 && values[1] == 41)
    }

    @Test func aTruncatedDHTFrameIsIncomplete() throws {
        let edges = try dhtAnswer(.dht22(humidity: 50, temperature: 20))
        #expect(DHTFrame.decode(edges: Array(edges.suffix(30)), model: .dht22) == .failure(.incompleteFrame(bits: 14)))
        #expect(DHTFrame.decode(edges: [], model: .dht22) == .failure(.timeout))
    }

    // MARK: rotary encoder

    @Test func encoderCountsStepsBothWaysThroughBounce() throws {
        let (a, b) = QuadratureWaveform.lines(steps: [+1, +1, +1, -1, -1], bounce: true)
        let spec = SensorSpec(name: "knob", kind: RotaryEncoderSettings(a: LineSelector("A"), b: LineSelector("B")))
        let (_, driver, initial) = try drive([a, b], [spec])
        let values = initial + driver.run(for: .seconds(2))
        #expect(values.compactMap(\.number) == [0, 1, 2, 3, 2, 1])
    }

    @Test func encoderWrapsWithinItsRange() throws {
        let (a, b) = QuadratureWaveform.lines(steps: [-1, -1, +1, +1, +1], bounce: false)
        let spec = SensorSpec(
            name: "knob",
            kind:
                RotaryEncoderSettings(
                    a: LineSelector("A"), b: LineSelector("B"), wrap: 0...2))
        let (_, driver, initial) = try drive([a, b], [spec])
        let values = initial + driver.run(for: .seconds(2))
        #expect(values.compactMap(\.number) == [0, 2, 1, 2, 0, 1])
    }

    // MARK: output

    @Test func outputIsDrivenByWritesAndReadable() throws {
        let spec = SensorSpec(name: "relay", kind: OutputSensorSettings(line: LineSelector("RELAY")))
        let (sim, driver, initial) = try drive([SimulatedLineConfig(name: "RELAY")], [spec])
        #expect(initial.map(\.bool) == [false])
        #expect(try driver.write("relay", true).map(\.bool) == [true])
        #expect(try sim.level(of: LineSelector("RELAY")))
        #expect(throws: SensorError.unknownSensor("fan")) { try driver.write("fan", true) }
        driver.stop()
        #expect(try sim.chips()[0].lines[0].used == false)
    }

    @Test func onlyOutputsAcceptWrites() throws {
        let spec = SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOOR")))
        let (_, driver, _) = try drive([SimulatedLineConfig(name: "DOOR")], [spec])
        #expect(throws: SensorError.notWritable) { try driver.write("door", true) }
    }

    @Test func aMissingLineFailsAtConstructionNamingTheClosest() throws {
        let spec = SensorSpec(name: "door", kind: BinarySettings(line: LineSelector("DOR")))
        #expect(throws: GPIOError.lineNotFound(LineSelector("DOR"), closest: ["DOOR"])) {
            _ = try drive([SimulatedLineConfig(name: "DOOR"), SimulatedLineConfig(name: "LED")], [spec])
        }
    }
}

/// Builds the two phases of a quadrature encoder as `steps` generators.
enum QuadratureWaveform {
    /// One detent step = 4 transitions, 5 ms apart, after 100 ms at rest. With `bounce` every
    /// change of a phase first flickers (on 50 µs, off 50 µs) before settling.
    static func lines(steps: [Int], bounce: Bool) -> (SimulatedLineConfig, SimulatedLineConfig) {
        let forward: [(Bool, Bool)] = [(true, false), (true, true), (false, true), (false, false)]
        let backward: [(Bool, Bool)] = [(false, true), (true, true), (true, false), (false, false)]
        var states: [(Bool, Bool)] = []
        for step in steps { states += step > 0 ? forward : backward }
        var a: [SignalGenerator.Step] = [.init(false, .milliseconds(100))]
        var b: [SignalGenerator.Step] = [.init(false, .milliseconds(100))]
        var previous = (false, false)
        for state in states {
            for (phase, old, new) in [(0, previous.0, state.0), (1, previous.1, state.1)] {
                var list = phase == 0 ? a : b
                if old != new, bounce {
                    list += [.init(new, .microseconds(50)), .init(old, .microseconds(50)), .init(new, .microseconds(4_900))]
                } else {
                    list.append(.init(new, .milliseconds(5)))
                }
                if phase == 0 { a = list } else { b = list }
            }
            previous = state
        }
        a.append(.init(previous.0, .seconds(100)))
        b.append(.init(previous.1, .seconds(100)))
        return (
            SimulatedLineConfig(name: "A", generator: .steps(a, repeats: false)),
            SimulatedLineConfig(name: "B", generator: .steps(b, repeats: false))
        )
    }
}
