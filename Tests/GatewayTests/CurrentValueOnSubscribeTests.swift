import BluetoothGATT
import Gateway
import Testing

/// `notify.on_subscribe` through the value pipeline (in-memory peripheral, manual clock): a
/// central that enables notifications or indications on a sensor's characteristic gets the current
/// value at once, subject to the notify policy.
@Suite(.timeLimit(.minutes(1)))
struct CurrentValueOnSubscribeTests {
    static let yaml = """
        device: {name: on-subscribe}
        gpio:
          backend: simulated
          chips:
            - lines:
                - name: DHT
        sensors:
          - id: climate
            kind: dht22
            line: DHT
        services:
          - uuid: 181A
            name: environment
            characteristics:
              - uuid: 2A6E
                name: temperature
                source: {sensor: climate, reading: temperature}
                notify: {min_interval: 250ms}
              - uuid: 2A6F
                name: humidity
                properties: [read, indicate]
                source: {sensor: climate, reading: humidity}
          - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
            name: gateway
            characteristics:
              - uuid: 6E400002-B5A3-F393-E0A9-E50E24DC0001
                name: quiet
                format: sint16
                exponent: -2
                source: {sensor: climate, reading: temperature}
                notify: {on_subscribe: false}
              - uuid: 6E400007-B5A3-F393-E0A9-E50E24DC0001
                name: label
                format: utf8
                max_length: 8
                properties: [read, write, notify]
                source: {written: "hi"}
                permissions: {write: open}
        """

    let alice = CentralID(1)

    static func fixture() async throws -> PipelineFixture {
        let fixture = try await PipelineFixture(yaml: yaml)
        await fixture.peripheral.transmitRoomFreed(100)
        return fixture
    }

    /// On by default for a sensor source: the current value at the subscription, then on_change
    /// counts from it (the same value again is not sent, a change is).
    @Test func aNewSubscriberGetsTheSensorsCurrentValueAtOnce() async throws {
        let fixture = try await Self.fixture()
        let path = "environment/temperature"
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        await fixture.advance(by: .seconds(5))
        #expect(await fixture.subscribe(alice, to: path) == [sint16(2150)])
        await fixture.advance(by: .seconds(1))
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        #expect(await fixture.notifications(alice, on: path).isEmpty, "unchanged: on_change holds it back")
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 22))
        #expect(await fixture.notifications(alice, on: path) == [sint16(2200)])
    }

    /// `on_subscribe: false`: nothing at the subscription; the next value goes (nothing was sent
    /// to this central yet, so on_change lets even the same value through).
    @Test func offTheSubscriberWaitsForTheNextValue() async throws {
        let fixture = try await Self.fixture()
        let path = "gateway/quiet"
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        #expect(await fixture.subscribe(alice, to: path).isEmpty)
        await fixture.advance(by: .seconds(1))
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        #expect(await fixture.notifications(alice, on: path) == [sint16(2150)])
    }

    @Test func beforeTheFirstValueThereIsNothingToSend() async throws {
        let fixture = try await Self.fixture()
        let path = "environment/temperature"
        #expect(await fixture.subscribe(alice, to: path).isEmpty)
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 20))
        #expect(await fixture.notifications(alice, on: path) == [sint16(2000)])
    }

    /// Off by default for the other sources: a written value waits for the next write.
    @Test func aWrittenValueIsNotSentOnSubscribeByDefault() async throws {
        let fixture = try await Self.fixture()
        #expect(await fixture.pipeline.currentBytes(fixture.ref("gateway/label")) == Array("hi".utf8))
        #expect(await fixture.subscribe(alice, to: "gateway/label").isEmpty)
    }

    /// A central that unsubscribes and subscribes again gets the current value again.
    @Test func aResubscriptionGetsTheCurrentValueAgain() async throws {
        let fixture = try await Self.fixture()
        let path = "environment/temperature"
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        #expect(await fixture.subscribe(alice, to: path) == [sint16(2150)])
        let cccd = await fixture.characteristic(path).clientConfigurationHandle!
        await fixture.peripheral.receive([0x12] + le(cccd) + [0x00, 0x00], from: alice)
        await fixture.advance(by: .milliseconds(100))
        #expect(await fixture.subscribe(alice, to: path) == [sint16(2150)], "within min_interval of the first: a new subscription")
    }

    /// A central that enables indications gets the current value as an indication.
    @Test func anIndicationSubscriberGetsItAsAnIndication() async throws {
        let fixture = try await Self.fixture()
        let humidity = await fixture.characteristic("environment/humidity")
        await fixture.pipeline.sensorValue(reading("climate", "humidity", 45))
        await fixture.peripheral.centralConnected(alice)
        await fixture.peripheral.receive([0x12] + le(humidity.clientConfigurationHandle!) + [0x02, 0x00], from: alice)
        // Write Response, then the Handle Value Indication of 45.00 % (uint16, exponent -2).
        #expect(fixture.link.take(alice) == [[0x13], [0x1D] + le(humidity.valueHandle) + le(4500)])
    }

    /// A bonded central whose subscription comes back on reconnection (restored from its bond,
    /// without a CCCD write) gets the current value just as when it enabled notifications.
    @Test func aRestoredSubscriptionGetsTheCurrentValue() async throws {
        let fixture = try await Self.fixture()
        let path = "environment/temperature"
        await fixture.pipeline.sensorValue(reading("climate", "temperature", 21.5))
        let cccd = await fixture.characteristic(path).clientConfigurationHandle!
        await fixture.peripheral.centralConnected(alice)
        await fixture.peripheral.restoreSubscriptions([cccd: 0x0001], for: alice)
        #expect(await fixture.notifications(alice, on: path) == [sint16(2150)])
    }
}
