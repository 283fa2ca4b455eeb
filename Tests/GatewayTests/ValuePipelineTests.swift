import BluetoothCore
import BluetoothGATT
import Config
import EventLoop
import Foundation
import Gateway
import Notify
import Sensors
import TestHarness
import Testing
import Values

/// The value pipeline on an in-memory peripheral and a manual clock: configuration → GATT
/// database, sensor values → reads and rate-limited notifications, backpressure, writes.
@Suite(.timeLimit(.minutes(1)))
struct ValuePipelineTests {
    static let yaml = """
        device: {name: pipeline}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DHT
                - name: RELAY
        sensors:
          - id: climate
            kind: dht22
            line: DHT
          - id: relay
            kind: output
            line: RELAY
        services:
          - uuid: 181A
            name: environment
            characteristics:
              - uuid: 2A6E
                name: temperature
                source: {sensor: climate, reading: temperature}
                notify: {min_interval: 250ms}
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: 6E400006-B5A3-F393-E0A9-E50E24DC0001
                name: relay
                format: bool
                source: {sensor: relay}
                permissions: {write: open}
              - uuid: 6E400007-B5A3-F393-E0A9-E50E24DC0001
                name: label
                format: utf8
                max_length: 8
                properties: [read, write, write_without_response, notify]
                source: {written: "hi"}
                permissions: {write: open}
        """

    let alice = CentralID(1)
    let bob = CentralID(2)

    @Test func sameConfigurationGetsTheSameHandles() async throws {
        let first = try await PipelineFixture(yaml: Self.yaml)
        let second = try await PipelineFixture(yaml: Self.yaml)
        for path in ["environment/temperature", "gateway/relay", "gateway/label"] {
            let a = await first.characteristic(path)
            let b = await second.characteristic(path)
            #expect(
                (a.declarationHandle, a.valueHandle, a.clientConfigurationHandle)
                    == (b.declarationHandle, b.valueHandle, b.clientConfigurationHandle))
        }
        // Services follow GAP and GATT, in configuration order.
        let temperature = await first.characteristic("environment/temperature")
        let relay = await first.characteristic("gateway/relay")
        #expect(temperature.valueHandle < relay.valueHandle)
    }

    @Test func serverConfigurationCarriesNameAppearanceAndConnectionPreferences() throws {
        let config = try ConfigLoader.load(
            yaml: """
                device: {name: greenhouse, appearance: 1347}
                bluetooth:
                  connection: {min_interval: 30ms, max_interval: 50ms, latency: 2, supervision_timeout: 4s}
                gpio: {backend: simulated}
                """
        ).config
        let server = GATTLayout(config: config).serverConfiguration
        #expect(server.deviceName == "greenhouse")
        #expect(server.appearance == 1347)
        #expect(
            server.preferredConnectionParameters
                == .init(
                    minimumInterval: 24, maximumInterval: 40,
                    peripheralLatency: 2, supervisionTimeout: 400))
    }

    /// A service is published after the services it includes, which it then names by their IDs.
    @Test func includedServicesArePublishedFirst() async throws {
        let fixture = try await PipelineFixture(
            yaml: """
                device: {name: includes}
                gpio: {backend: simulated}
                services:
                  - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                    name: main
                    includes: [extra]
                    characteristics:
                      - {uuid: 2A19, name: a, format: uint8, source: {static: 1}}
                  - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                    name: extra
                    primary: false
                    characteristics:
                      - {uuid: 2A29, name: b, format: uint8, source: {static: 2}}
                """)
        #expect(fixture.layout.publishingOrder == [1, 0])
        let services = await fixture.peripheral.services
        let main = try #require(services.first { $0.characteristics.first?.uuid == BluetoothUUID(0x2A19) })
        let extra = try #require(services.first { !$0.isPrimary })
        #expect(extra.handles.upperBound < main.handles.lowerBound)
        // main's Include declaration names extra's handle range.
        await fixture.peripheral.centralConnected(CentralID(4))
        await fixture.peripheral.receive(
            [0x08] + le(main.handles.lowerBound) + le(main.handles.upperBound) + [0x02, 0x28],
            from: CentralID(4))
        let include = try #require(fixture.link.take(CentralID(4)).first)
        #expect(Array(include.prefix(2)) == [0x09, 6])
        #expect(Array(include[4..<8]) == le(extra.handles.lowerBound) + le(extra.handles.upperBound))
        // Static values are fixed in the database: a read needs no handler.
        await fixture.peripheral.centralConnected(CentralID(3))
        await fixture.peripheral.receive([0x0A] + le(main.characteristics[0].valueHandle), from: CentralID(3))
        #expect(fixture.link.take(CentralID(3)) == [[0x0B, 0x01]])
    }

    /// A sensor characteristic in the Environmental Sensing Service gets its CCCD, then User
    /// Description, Presentation Format (sint16, exponent -2, °C) and ES Measurement.
    @Test func sensorCharacteristicsGetTheirDescriptors() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let temperature = await fixture.characteristic("environment/temperature")
        let central = CentralID(7)
        await fixture.peripheral.centralConnected(central)
        let start = temperature.valueHandle + 1
        await fixture.peripheral.receive([0x04] + le(start) + le(start + 3), from: central)
        let response = try #require(fixture.link.take(central).first)
        #expect(
            response == [0x05, 0x01] + le(start) + [0x02, 0x29] + le(start + 1) + [0x01, 0x29]
                + le(start + 2) + [0x04, 0x29] + le(start + 3) + [0x0C, 0x29])
        // Read the Presentation Format.
        await fixture.peripheral.receive([0x0A] + le(start + 2), from: central)
        #expect(fixture.link.take(central) == [[0x0B, 0x0E, 0xFE, 0x2F, 0x27, 0x01, 0x00, 0x00]])
        await fixture.peripheral.receive([0x0A] + le(start + 1), from: central)
        #expect(fixture.link.take(central) == [[0x0B] + Array("temperature".utf8)])
    }

    /// 100 Hz input under `min_interval: 250ms`: one notification per 250 ms, each the newest
    /// value at that moment, and the last value of the burst arrives.
    @Test func rateLimitedNotificationsCarryTheNewestValue() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.transmitRoomFreed(1000)
        await fixture.subscribe(alice, to: "environment/temperature")
        var received: [(ms: Int, raw: Int16)] = []
        for step in 0..<100 {
            if step > 0 { await fixture.advance(by: .milliseconds(10)) }
            await fixture.pipeline.sensorValue(reading("climate", "temperature", Double(2000 + step) / 100))
            for value in await fixture.notifications(alice, on: "environment/temperature") {
                received.append((step * 10, Int16(bitPattern: UInt16(value[0]) | UInt16(value[1]) << 8)))
            }
        }
        await fixture.advance(by: .milliseconds(10))
        for value in await fixture.notifications(alice, on: "environment/temperature") {
            received.append((1000, Int16(bitPattern: UInt16(value[0]) | UInt16(value[1]) << 8)))
        }
        #expect(received.map(\.ms) == [0, 250, 500, 750, 1000])
        #expect(received.map(\.raw) == [2000, 2024, 2049, 2074, 2099])
        // Reads get the newest value at once, whatever the notify policy.
        #expect(await fixture.pipeline.currentBytes(fixture.ref("environment/temperature")) == sint16(2099))
        // The periodic statistics: the log line's counters, and a status event for MQTT's state.
        let counters = await fixture.pipeline.statistics.perCharacteristic[fixture.ref("environment/temperature")]
        #expect(counters?.sent == 5)
        await fixture.pipeline.logStatistics()
        while let event = await fixture.pipelineEvents.next() {
            guard case .status(let peripheral, let advertising, let counters, _, _) = event, counters["sent"] == 5 else {
                continue
            }
            #expect(peripheral == "poweredOn")
            #expect(!advertising, "no host advertises here")
            #expect(counters["centrals"] == 1)
            #expect(counters["environment/temperature.sent"] == 5)
            #expect(counters["central#1.sent"] == 5)
            break
        }
    }

    /// A button's presses on a uint8 characteristic: every press is notified, the same press
    /// twice too, and a central that subscribes later is not sent the last press as a new one;
    /// a read gets the last press's code.
    @Test func everyPressIsNotifiedOnce() async throws {
        let fixture = try await PipelineFixture(
            yaml: """
                device: {name: presses}
                gpio:
                  backend: simulated
                  chips:
                    - lines:
                        - name: BTN
                sensors:
                  - {id: button, kind: binary, line: BTN, press: {}}
                services:
                  - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                    name: io
                    characteristics:
                      - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                        name: button
                        format: uint8
                        source: {sensor: button, reading: press}
                """)
        await fixture.peripheral.transmitRoomFreed(1000)
        #expect(await fixture.subscribe(alice, to: "io/button").isEmpty)
        for code in [1.0, 1, 2, 4] {
            await fixture.pipeline.sensorValue(reading("button", SensorSample.pressChannel, code))
        }
        #expect(await fixture.notifications(alice, on: "io/button") == [[1], [1], [2], [4]])
        #expect(await fixture.subscribe(bob, to: "io/button").isEmpty, "no old press on subscribing")
        #expect(await fixture.pipeline.currentBytes(fixture.ref("io/button")) == [4])
    }

    /// The MQTT mirror gets a value in the call that changed it, in order with the events around
    /// it: nothing waits in between for a task to take it later, and without a sink nothing is
    /// sent anywhere.
    @Test func eventsReachTheSinkInTheCallThatMadeThem() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let seen = EventLog<PipelineEvent>()
        await fixture.pipeline.setEventSink { seen.append($0) }
        let temperature = fixture.ref("environment/temperature")
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21))
        let first = try #require(await fixture.pipeline.currentBytes(temperature))
        #expect(seen.all == [.valueChanged(temperature, first)])
        await fixture.peripheral.centralConnected(alice)
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 22))
        let second = try #require(await fixture.pipeline.currentBytes(temperature))
        #expect(seen.all == [.valueChanged(temperature, first), .centralConnected(alice, mtu: 23), .valueChanged(temperature, second)])
        await fixture.pipeline.setEventSink(nil)
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 23))
        #expect(seen.all.count == 3, "no sink, no event")
    }

    /// A central that leaves takes its counters with it, and `state` says so at once: the
    /// disconnection is followed by a status with the counters as they are now (three phones
    /// that came and went are not `centrals 3` until the next statistics tick).
    @Test func aDisconnectionIsFollowedByTheCountersAsTheyAreNow() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.subscribe(alice, to: "environment/temperature")
        let seen = EventLog<PipelineEvent>()
        await fixture.pipeline.setEventSink { seen.append($0) }
        await fixture.pipeline.logStatistics()
        guard case .status(_, _, let before, _, _) = seen.all.last else { return }
        #expect(before["centrals"] == 1)
        await fixture.pipeline.handle(PeripheralEvent.centralDisconnected(alice))
        let after = seen.all.drop { $0 != .centralDisconnected(alice) }.dropFirst()
        guard case .status(_, _, let counters, _, _) = after.first else {
            Issue.record("no status after the disconnection: \(seen.all)")
            return
        }
        #expect(counters["centrals"] == 0)
        #expect(counters["central#1.sent"] == nil)
    }

    /// A sensor that stopped answering: its characteristics are reported unavailable to the
    /// mirror and in the status, and the notify heartbeat stops resending the old value; its next
    /// good reading brings the value and the heartbeat back.
    @Test func anUnavailableSensorGetsNoHeartbeatUntilItsNextReading() async throws {
        let yaml = Self.yaml.replacingOccurrences(of: "notify: {min_interval: 250ms}", with: "notify: {max_interval: 1s}")
        let fixture = try await PipelineFixture(yaml: yaml)
        await fixture.peripheral.transmitRoomFreed(1000)
        let temperature = fixture.ref("environment/temperature")
        await fixture.subscribe(alice, to: "environment/temperature")
        let seen = EventLog<PipelineEvent>()
        await fixture.pipeline.setEventSink { seen.append($0) }
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2100)])
        await fixture.advance(by: .seconds(1))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2100)], "a heartbeat")

        await fixture.pipeline.sensorAvailability(sensor: "climate", unavailable: "no good reading for 30 s")
        #expect(seen.all.contains(.availabilityChanged(temperature, unavailable: "no good reading for 30 s")))
        guard case .status(_, _, _, _, let unavailable) = seen.all.last else {
            Issue.record("no status: \(seen.all)")
            return
        }
        #expect(unavailable == ["climate": "no good reading for 30 s"])
        #expect(await fixture.pipeline.unavailableSensors == ["climate": "no good reading for 30 s"])
        for _ in 0..<5 { await fixture.advance(by: .seconds(1)) }
        #expect(await fixture.notifications(alice, on: "environment/temperature").isEmpty, "no heartbeat of a stale value")
        #expect(
            fixture.warnings.all.contains {
                $0.contains("sensor unavailable") && $0.contains("no good reading for 30 s") && $0.contains("sensor=climate")
            })

        await fixture.pipeline.sensorAvailability(sensor: "climate", unavailable: nil)
        #expect(seen.all.contains(.availabilityChanged(temperature, unavailable: nil)))
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 22))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2200)])
        await fixture.advance(by: .seconds(1))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2200)], "the heartbeat is back")
        await fixture.finish()
    }

    /// A Write Command (write without response) gets no answer when it cannot be applied, so
    /// the pipeline counts it (`write_commands_refused` in `state`) and logs it at debug level.
    @Test func aRefusedWriteCommandIsCounted() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.centralConnected(alice)
        let temperature = await fixture.characteristic("environment/temperature")
        let label = await fixture.characteristic("gateway/label")
        // Read-only, then a value too long for the label's 8 bytes, then one that fits.
        await fixture.peripheral.receive([0x52] + le(temperature.valueHandle) + [1, 2], from: alice)
        await fixture.peripheral.receive([0x52] + le(label.valueHandle) + Array("far too long".utf8), from: alice)
        await fixture.peripheral.receive([0x52] + le(label.valueHandle) + Array("ok".utf8), from: alice)
        #expect(fixture.link.take(alice).isEmpty, "a Write Command is never answered")
        let seen = EventLog<PipelineEvent>()
        await fixture.pipeline.setEventSink { seen.append($0) }
        await fixture.pipeline.logStatistics()
        guard case .status(_, _, let counters, _, _) = seen.all.last else {
            Issue.record("no status: \(seen.all)")
            return
        }
        #expect(counters["write_commands_refused"] == 2)
        #expect(await fixture.pipeline.currentBytes(fixture.ref("gateway/label")) == Array("ok".utf8))
    }

    /// Lost GPIO events reach MQTT's `state` counters, per sensor and in total.
    @Test func lostEventsAreCounted() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.pipeline.lostEvents(sensor: "climate", total: 7)
        await fixture.pipeline.lostEvents(sensor: "relay", total: 2)
        await fixture.pipeline.lostEvents(sensor: "climate", total: 9)
        await fixture.pipeline.logStatistics()
        while let event = await fixture.pipelineEvents.next() {
            guard case .status(_, _, let counters, _, _) = event, counters["lost_events"] != 0 else { continue }
            #expect(counters["lost_events"] == 11)
            #expect(counters["climate.lost_events"] == 9)
            #expect(counters["relay.lost_events"] == 2)
            break
        }
    }

    /// Home Assistant's diagnostics (uptime, outbox, centrals, counters) come from MQTT's `state`
    /// topic, which the mirror publishes at every status event (issue 15): `run` sends one every
    /// `statisticsInterval` with the counters as they are then, so the state is published again
    /// while nothing else happens, not only when something changes.
    @Test func theStatusIsSentAgainEveryStatisticsInterval() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        let pipeline = fixture.pipeline
        let running = Task { await pipeline.run(statisticsInterval: .milliseconds(50)) }
        // A counter that changes without an event of its own: only a later status carries it.
        await pipeline.lostEvents(sensor: "climate", total: 7)
        // Waits for the statuses rather than counting them over a fixed time, which a loaded
        // machine's starved timer fails; should they never come, the stream ends after 30 s.
        let endEvents = fixture.endEvents
        let giveUp = Task {
            guard (try? await Task.sleep(for: .seconds(30))) != nil else { return }
            running.cancel()
            await running.value
            await pipeline.finish()
            endEvents()
        }
        var carrying = 0
        while carrying < 5, let event = await fixture.pipelineEvents.next() {
            if case .status(_, _, let counters, _, _) = event, counters["lost_events"] == 7 { carrying += 1 }
        }
        giveUp.cancel()
        running.cancel()
        await running.value
        await fixture.finish()
        // `run`'s first status may be among them, so at least 4 came from the timer.
        #expect(carrying >= 5)
    }

    /// A reading that failed (a DHT frame lost, a counter's total not saved) is logged as a
    /// warning naming the sensor and why; the characteristic keeps the last value read.
    @Test func aFailedReadingIsLoggedAndTheValueKept() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        let temperature = fixture.ref("environment/temperature")
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        await fixture.pipeline.sensorValue(
            SensorSample(
                sensor: "climate", channel: "temperature", reading: .failure(.incompleteFrame(bits: 31)), timestampNs: 0))
        #expect(await fixture.pipeline.currentBytes(temperature) == sint16(2150))
        #expect(
            fixture.warnings.all == [
                "<4>test: sensor reading failed channel=temperature reason=\"incomplete frame: 31 of 40 bits received\" sensor=climate\n"
            ])
        await fixture.finish()
    }

    /// A phone's write to an output is acknowledged before the line is driven, so a line that
    /// cannot be driven is reported afterwards, as a durable event for the error topic.
    @Test func anOutputThatCannotBeDrivenIsReported() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.centralConnected(alice)
        let relay = await fixture.characteristic("gateway/relay")
        fixture.outputs.failFromNowOn()
        await fixture.peripheral.receive([0x12] + le(relay.valueHandle) + [0x01], from: alice)
        #expect(fixture.link.take(alice) == [[0x13]])
        await fixture.pipeline.outputsDriven()
        var failure: PipelineEvent?
        while let event = await fixture.durableEvents.next() {
            if case .outputFailed = event {
                failure = event
                break
            }
        }
        #expect(failure == .outputFailed(fixture.ref("gateway/relay"), alice, reason: "driving output relay failed: the line is gone"))
    }

    /// A flood of values loses none of the writes made in between, nor any value: each reaches
    /// the mirror as it happens, in order, with no buffer between to overflow.
    ///
    /// On the loop, as the gateway's own tasks run: from the global pool each of the 16,000 calls
    /// would hop to the loop and back, and a loaded run took most of its time limit doing that.
    @Test func durableEventsSurviveAFloodOfValues() async throws {
        try await withTaskExecutorPreference(EventLoop.shared) { try await floodDurableEvents() }
    }

    private func floodDurableEvents() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.centralConnected(alice)
        let label = await fixture.characteristic("gateway/label")
        let writes = 2_000
        for index in 0..<writes {
            // A Write Command (no response) carrying "w<index>".
            await fixture.peripheral.receive([0x52] + le(label.valueHandle) + Array("w\(index)".utf8), from: alice)
            for step in 0..<5 {
                await fixture.pipeline.sensorValue(reading("climate", "temperature", Double((index * 5 + step) % 100)))
            }
        }
        await fixture.finish()
        var written: [String] = []
        while let event = await fixture.durableEvents.next() {
            if case .written(_, _, let bytes, _) = event { written.append(String(decoding: bytes, as: UTF8.self)) }
        }
        #expect(written == (0..<writes).map { "w\($0)" }, "every write, in order")
        var values = 0
        while let event = await fixture.pipelineEvents.next() {
            if case .valueChanged = event { values += 1 }
        }
        #expect(values == writes * 5 + writes, "every temperature, and every label written as its new value")
    }

    /// In the service the pipeline arms one timer for the engine's next deadline: a value held by
    /// `min_interval` goes out when the interval ends, with nobody calling `advance()`.
    @Test func theTimerSendsHeldValuesOnTheRealClock() async throws {
        let interval = Duration.milliseconds(1500)
        let fixture = try await PipelineFixture(
            yaml: Self.yaml.replacingOccurrences(of: "min_interval: 250ms", with: "min_interval: 1500ms"),
            timing: .realTime)
        await fixture.peripheral.transmitRoomFreed(10)
        await fixture.subscribe(alice, to: "environment/temperature")
        let start = ContinuousClock.now
        // Both values in one turn of the pipeline, so the second is held however long a loaded
        // machine keeps this test from running afterwards; only the pipeline's timer can send it.
        let held = await fixture.pipeline.takeSensorValues([
            reading("climate", "temperature", 20), reading("climate", "temperature", 21)
        ])
        #expect(held, "the second value waits for min_interval")
        var received: [[UInt8]] = []
        while received.count < 2, ContinuousClock.now - start < interval * 5 {
            received += await fixture.notifications(alice, on: "environment/temperature")
            if received.count < 2 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(received == [sint16(2000), sint16(2100)])
        #expect(ContinuousClock.now - start >= interval, "not before min_interval")
        #expect(await fixture.pipeline.nextDeadline == nil, "nothing left to schedule")
    }

    /// With the link full, `updateValue` returns false: the refused value goes back to the engine's
    /// slot, later values replace it, and on ready-to-update only the newest goes out — never a stale
    /// value before it — in the call that freed the room (the peripheral's event reaches the
    /// pipeline there: no task takes it later).
    @Test func fullLinkHoldsOneValueAndResumesWhenReady() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.subscribe(alice, to: "gateway/label")
        await fixture.peripheral.transmitRoomFreed(1)
        let label = fixture.ref("gateway/label")
        for text in ["a", "b", "c", "d", "e"] {
            await fixture.pipeline.externalValue(.text(text), for: label)
        }
        #expect(await fixture.notifications(alice, on: "gateway/label") == [Array("a".utf8)])
        let waiting = await fixture.pipeline.statistics.valuesWaiting
        #expect(waiting <= 1)
        await fixture.peripheral.transmitRoomFreed(1)
        #expect(
            await fixture.notifications(alice, on: "gateway/label") == [Array("e".utf8)],
            "b (refused by the link), c and d coalesced; no stale value first")
        await fixture.peripheral.transmitRoomFreed(1)
        #expect(await fixture.notifications(alice, on: "gateway/label").isEmpty)
        let counters = await fixture.pipeline.statistics.perCharacteristic[label]
        #expect(counters?.sent == 2)
        #expect(counters?.coalesced == 3)
    }

    /// A central whose updates are never delivered (its link stalled) fills its share and then
    /// waits with one value; the other central keeps getting every value.
    @Test func aStalledCentralDoesNotHoldUpTheOther() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.subscribe(alice, to: "gateway/label")
        await fixture.subscribe(bob, to: "gateway/label")
        await fixture.peripheral.transmitRoomFreed(8)
        let label = fixture.ref("gateway/label")
        var toAlice: [[UInt8]] = []
        for index in 0..<20 {
            await fixture.pipeline.externalValue(.text("v\(index)"), for: label)
            toAlice += await fixture.notifications(alice, on: "gateway/label")
            // The link returns alice's credit; bob's stay with his stalled link.
            await fixture.peripheral.transmitRoomFreed(1)
        }
        #expect(toAlice == (0..<20).map { Array("v\($0)".utf8) })
        let statistics = await fixture.pipeline.statistics
        #expect(statistics.perCentral[bob]?.sent == GATTServer.Configuration().perCentralUpdateLimit)
        #expect(statistics.valuesWaiting == 1, "bob's newest value waits, nothing more")
    }

    @Test func centralWritesAreCheckedStoredAndReported() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.transmitRoomFreed(10)
        await fixture.subscribe(bob, to: "gateway/label")
        await fixture.peripheral.centralConnected(alice)
        let label = await fixture.characteristic("gateway/label")
        await fixture.peripheral.receive([0x0A] + le(label.valueHandle), from: alice)
        #expect(fixture.link.take(alice) == [[0x0B] + Array("hi".utf8)], "the configured initial value")

        await fixture.peripheral.receive([0x12] + le(label.valueHandle) + Array("hello".utf8), from: alice)
        #expect(fixture.link.take(alice) == [[0x13]])
        // Told in the call that carried the write, once it was answered.
        #expect(
            await fixture.notifications(bob, on: "gateway/label") == [Array("hello".utf8)],
            "other subscribers hear the write")
        await fixture.peripheral.receive([0x0A] + le(label.valueHandle), from: alice)
        #expect(fixture.link.take(alice) == [[0x0B] + Array("hello".utf8)])

        // Longer than max_length: refused, nothing changes.
        await fixture.peripheral.receive([0x12] + le(label.valueHandle) + Array("too long!".utf8), from: alice)
        #expect(fixture.link.take(alice) == [[0x01, 0x12] + le(label.valueHandle) + [0x0D]])
        await fixture.peripheral.receive([0x0A] + le(label.valueHandle), from: alice)
        #expect(fixture.link.take(alice) == [[0x0B] + Array("hello".utf8)])

        var mirrored: [PipelineEvent] = []
        while let event = await fixture.durableEvents.next() {
            mirrored.append(event)
            if case .written = event { break }
        }
        let ref = fixture.ref("gateway/label")
        #expect(mirrored.contains(.written(ref, alice, Array("hello".utf8), .request)))
        #expect(mirrored.contains(.subscribed(ref, bob, .notification)))
    }

    @Test func anMTUExchangeReachesTheMirror() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.centralConnected(alice)
        await fixture.peripheral.receive([0x02] + le(185), from: alice)
        #expect(fixture.link.take(alice).first?.first == 0x03)
        var mirrored: [PipelineEvent] = []
        while let event = await fixture.durableEvents.next() {
            mirrored.append(event)
            if case .mtuChanged = event { break }
        }
        #expect(mirrored.contains(.centralConnected(alice, mtu: 23)))
        #expect(mirrored.last == .mtuChanged(alice, mtu: 185))
    }

    @Test func writesSayWhichATTWriteCarriedThem() async throws {
        var fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.centralConnected(alice)
        let label = await fixture.characteristic("gateway/label")
        let handle = le(label.valueHandle)
        await fixture.peripheral.receive([0x12] + handle + Array("req".utf8), from: alice)
        await fixture.peripheral.receive([0x52] + handle + Array("cmd".utf8), from: alice)
        // A long write: two prepared parts, then Execute Write.
        await fixture.peripheral.receive([0x16] + handle + [0x00, 0x00] + Array("lo".utf8), from: alice)
        await fixture.peripheral.receive([0x16] + handle + [0x02, 0x00] + Array("ng".utf8), from: alice)
        await fixture.peripheral.receive([0x18, 0x01], from: alice)
        #expect(
            fixture.link.take(alice) == [
                [0x13], [0x17] + handle + [0x00, 0x00] + Array("lo".utf8),
                [0x17] + handle + [0x02, 0x00] + Array("ng".utf8), [0x19]
            ])

        var written: [PipelineEvent] = []
        while written.count < 3, let event = await fixture.durableEvents.next() {
            if case .written = event { written.append(event) }
        }
        let ref = fixture.ref("gateway/label")
        #expect(
            written == [
                .written(ref, alice, Array("req".utf8), .request), .written(ref, alice, Array("cmd".utf8), .command),
                .written(ref, alice, Array("long".utf8), .prepared)
            ])
    }

    @Test func writesToAnOutputDriveItsLine() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.centralConnected(alice)
        let relay = await fixture.characteristic("gateway/relay")
        await fixture.peripheral.receive([0x12] + le(relay.valueHandle) + [0x01], from: alice)
        #expect(fixture.link.take(alice) == [[0x13]])
        await fixture.pipeline.outputsDriven()
        #expect(fixture.outputs.all == ["relay=true"])
        // A bool is one byte.
        await fixture.peripheral.receive([0x12] + le(relay.valueHandle) + [0x01, 0x00], from: alice)
        #expect(fixture.link.take(alice) == [[0x01, 0x12] + le(relay.valueHandle) + [0x0D]])
        // MQTT's /set on an output drives the line too.
        await fixture.pipeline.externalValue(.bool(false), for: fixture.ref("gateway/relay"))
        #expect(fixture.outputs.all == ["relay=true", "relay=false"])
    }

    @Test func failedReadingsAndUnsubscribedCentralsSendNothing() async throws {
        let fixture = try await PipelineFixture(yaml: Self.yaml)
        await fixture.peripheral.transmitRoomFreed(100)
        await fixture.subscribe(alice, to: "environment/temperature")
        await fixture.pipeline.sensorValue(
            .init(
                sensor: "climate", channel: "temperature",
                reading: .failure(.timeout), timestampNs: 0))
        #expect(await fixture.notifications(alice, on: "environment/temperature").isEmpty)
        #expect(await fixture.pipeline.currentBytes(fixture.ref("environment/temperature")) == nil)
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2150)])
        let temperature = await fixture.characteristic("environment/temperature")
        await fixture.peripheral.receive([0x12] + le(temperature.clientConfigurationHandle!) + [0x00, 0x00], from: alice)
        _ = fixture.link.take(alice)
        await fixture.advance(by: .seconds(1))
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 22))
        #expect(await fixture.notifications(alice, on: "environment/temperature").isEmpty)
    }
}

extension ValuePipeline {
    /// Takes `readings` one after the other in one turn of the pipeline; whether a deadline is
    /// then scheduled (a value held back).
    fileprivate func takeSensorValues(_ readings: [SensorSample]) -> Bool {
        for reading in readings { sensorValue(reading) }
        return nextDeadline != nil
    }
}
