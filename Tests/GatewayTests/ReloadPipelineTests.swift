import BluetoothCore
import BluetoothGATT
import Config
import Sensors
import Testing
import Values

@testable import Gateway

/// A reload on a running pipeline. Its GATT layout (`ValuePipeline.changeLayout`): a changed
/// service is removed and published anew under one Service Changed indication; an unchanged one
/// keeps its handles, its subscribers and their notifications. Its notify policies
/// (`changeNotifyPolicies`): a heartbeat added beats on the subscription as it is.
@Suite(.timeLimit(.minutes(1)))
struct ReloadPipelineTests {
    /// `ValuePipelineTests.yaml` with a static `mode` in `gateway` and a new `extra` service
    /// carrying the climate sensor's humidity.
    static let changedYAML = """
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
              - uuid: 6E400008-B5A3-F393-E0A9-E50E24DC0001
                name: mode
                format: utf8
                source: {static: auto}
          - uuid: 6E400010-B5A3-F393-E0A9-E50E24DC0001
            name: extra
            characteristics:
              - uuid: 2A6F
                name: humidity
                source: {sensor: climate, reading: humidity}
        """

    let alice = CentralID(1)
    let bob = CentralID(2)

    @Test func aChangedServiceIsPublishedAnewAndTheUnchangedOneKeepsNotifying() async throws {
        let fixture = try await PipelineFixture(yaml: ValuePipelineTests.yaml)
        await fixture.peripheral.transmitRoomFreed(1000)
        await fixture.subscribe(alice, to: "environment/temperature")
        await fixture.subscribe(bob, to: "gateway/label")
        for central in [alice, bob] {
            // Service Changed's CCCD (the GATT service takes handles 8–15).
            await fixture.peripheral.receive([0x12, 0x0B, 0x00, 0x02, 0x00], from: central)
            #expect(fixture.link.take(central) == [[0x13]])
        }
        let temperature = await fixture.characteristic("environment/temperature")
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 20))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2000)])
        let oldGateway = try #require(
            await fixture.peripheral.services.first { $0.uuid == BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DC0001") })

        let newConfig = try ConfigLoader.load(yaml: Self.changedYAML).config
        let change = try await fixture.pipeline.changeLayout(
            to: GATTLayout(config: newConfig),
            currentReadings: [reading("climate", "humidity", 45)])
        #expect((change.kept.count, change.removed.count, change.added.count) == (1, 1, 2))

        let services = await fixture.peripheral.services
        let extra = try #require(services.first { $0.uuid == BluetoothUUID("6E400010-B5A3-F393-E0A9-E50E24DC0001") })
        let gateway = try #require(services.first { $0.uuid == BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DC0001") })
        #expect(gateway.characteristics.count == 3)
        let changed = min(oldGateway.handles.lowerBound, gateway.handles.lowerBound)...extra.handles.upperBound
        for central in [alice, bob] {
            #expect(
                fixture.link.take(central) == [[0x1D, 0x0A, 0x00] + le(changed.lowerBound) + le(changed.upperBound)],
                "one Service Changed over every handle that changed")
            await fixture.peripheral.receive([0x1E], from: central)
        }
        let layout = await fixture.pipeline.layout
        #expect(await fixture.pipeline.publishedCharacteristic(layout.ref("environment/temperature")!) == temperature)
        #expect(await fixture.pipeline.currentBytes(layout.ref("environment/temperature")!) == sint16(2000), "its value stays")
        #expect(await fixture.pipeline.currentBytes(layout.ref("gateway/mode")!) == Array("auto".utf8))
        #expect(await fixture.pipeline.currentBytes(layout.ref("gateway/label")!) == Array("hi".utf8), "configured again")
        #expect(
            await fixture.pipeline.currentBytes(layout.ref("extra/humidity")!) == [0x94, 0x11],
            "the running sensor's reading, at once")

        await fixture.advance(by: .milliseconds(250))  // the temperature's min_interval
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2150)])
        await fixture.pipeline.externalValue(.text("new"), for: layout.ref("gateway/label")!)
        #expect(fixture.link.take(bob).isEmpty, "bob's label subscription ended with its service")
        #expect(await fixture.peripheral.clientConfigurations(of: bob) == [0x0B: 0x0002])
    }

    /// `max_interval` added by a reload: the subscriber, silent for seconds, gets the current value
    /// at once (its heartbeat is overdue), then once a second.
    @Test func aHeartbeatAddedByAReloadBeats() async throws {
        let fixture = try await PipelineFixture(yaml: ValuePipelineTests.yaml)
        await fixture.peripheral.transmitRoomFreed(100)
        await fixture.subscribe(alice, to: "environment/temperature")
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 20))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2000)])
        await fixture.advance(by: .seconds(5))
        #expect(await fixture.notifications(alice, on: "environment/temperature").isEmpty, "no heartbeat configured")

        let yaml = ValuePipelineTests.yaml.replacingOccurrences(
            of: "notify: {min_interval: 250ms}", with: "notify: {min_interval: 250ms, max_interval: 1s}")
        #expect(yaml != ValuePipelineTests.yaml)
        await fixture.pipeline.changeNotifyPolicies(try ConfigLoader.load(yaml: yaml).config.services)
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2000)], "overdue")
        await fixture.advance(by: .milliseconds(500))
        #expect(await fixture.notifications(alice, on: "environment/temperature").isEmpty)
        await fixture.advance(by: .milliseconds(500))
        #expect(await fixture.notifications(alice, on: "environment/temperature") == [sint16(2000)], "a second later")
    }

    /// A characteristic a reload adds on a running button: its state is read at once, but its
    /// last press is no value of a new characteristic (a press is an event, long over).
    @Test func aNewCharacteristicGetsTheSensorsStateButNotItsLastPress() async throws {
        func yaml(_ extra: String) -> String {
            """
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
                  - {uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001, name: button, format: uint8, source: {sensor: button, reading: press}}\(extra)
            """
        }
        let fixture = try await PipelineFixture(yaml: yaml(""))
        let added = """

                  - {uuid: 6E400003-B5A3-F393-E0A9-E50E24DC0001, name: presses, format: uint8, source: {sensor: button, reading: press}}
                  - {uuid: 6E400004-B5A3-F393-E0A9-E50E24DC0001, name: held, format: bool, source: {sensor: button}}
            """
        let config = try ConfigLoader.load(yaml: yaml(added)).config
        let readings = [
            reading("button", SensorSample.pressChannel, 2),
            SensorSample(sensor: "button", channel: "value", reading: .bool(true), timestampNs: 0)
        ]
        _ = try await fixture.pipeline.changeLayout(to: GATTLayout(config: config), currentReadings: readings)
        let layout = await fixture.pipeline.layout
        #expect(await fixture.pipeline.currentBytes(layout.ref("io/held")!) == [1])
        #expect(await fixture.pipeline.currentBytes(layout.ref("io/presses")!) == nil)
    }

    /// Includes: a service that includes a changed one is published anew too (its Include
    /// declaration names the other's new handles); one that includes an unchanged one stays.
    @Test func aServiceIncludingAChangedServiceIsPublishedAnew() async throws {
        func yaml(main: Int, extra: Int) -> String {
            """
            device: {name: includes}
            gpio: {backend: simulated}
            services:
              - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                name: main
                includes: [extra]
                characteristics:
                  - {uuid: 2A19, name: a, format: uint8, source: {static: \(main)}}
              - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                name: extra
                primary: false
                characteristics:
                  - {uuid: 2A29, name: b, format: uint8, source: {static: \(extra)}}
            """
        }
        let fixture = try await PipelineFixture(yaml: yaml(main: 1, extra: 2))
        let mainChanged = try await fixture.pipeline.changeLayout(
            to: GATTLayout(config: try ConfigLoader.load(yaml: yaml(main: 3, extra: 2)).config), currentReadings: [])
        #expect(mainChanged.kept.map(\.index) == [1] && mainChanged.added == [0])
        let extraChanged = try await fixture.pipeline.changeLayout(
            to: GATTLayout(config: try ConfigLoader.load(yaml: yaml(main: 3, extra: 4)).config), currentReadings: [])
        #expect(extraChanged.kept.isEmpty && extraChanged.added == [1, 0], "extra first, then main including it")
        let services = await fixture.peripheral.services
        let main = try #require(services.first { $0.characteristics.first?.uuid == BluetoothUUID(0x2A19) })
        let extra = try #require(services.first { !$0.isPrimary })
        await fixture.peripheral.centralConnected(CentralID(4))
        await fixture.peripheral.receive(
            [0x08] + le(main.handles.lowerBound) + le(main.handles.upperBound) + [0x02, 0x28], from: CentralID(4))
        let include = try #require(fixture.link.take(CentralID(4)).first)
        #expect(Array(include[4..<8]) == le(extra.handles.lowerBound) + le(extra.handles.upperBound))
    }

    /// With the controller down since the services were published, a new layout cannot be
    /// published: nothing changes (the reload tries again next time).
    @Test func withTheControllerDownNothingChanges() async throws {
        let fixture = try await PipelineFixture(yaml: ValuePipelineTests.yaml)
        await fixture.peripheral.updateState(.poweredOff)
        let config = try ConfigLoader.load(yaml: Self.changedYAML).config
        await #expect(throws: PeripheralError.notPoweredOn(.poweredOff)) {
            try await fixture.pipeline.changeLayout(to: GATTLayout(config: config), currentReadings: [])
        }
        #expect(await fixture.pipeline.layout.characteristics.count == 3, "the layout before")
    }

    /// A reload that changes nothing in the GATT services publishes nothing and indicates nothing.
    @Test func theSameLayoutChangesNothing() async throws {
        let fixture = try await PipelineFixture(yaml: ValuePipelineTests.yaml)
        await fixture.peripheral.transmitRoomFreed(10)
        await fixture.subscribe(alice, to: "environment/temperature")
        await fixture.peripheral.receive([0x12, 0x0B, 0x00, 0x02, 0x00], from: alice)
        _ = fixture.link.take(alice)
        let config = try ConfigLoader.load(yaml: ValuePipelineTests.yaml).config
        let change = try await fixture.pipeline.changeLayout(to: GATTLayout(config: config), currentReadings: [])
        #expect(change.isEmpty && change.kept.count == 2)
        #expect(fixture.link.take(alice).isEmpty)
    }
}
