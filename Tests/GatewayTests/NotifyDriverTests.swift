import BluetoothGATT
import Config
import EventLoop
import Foundation
import Logging
import LoopClock
import Notify
import Testing
import Values

@testable import Gateway

/// The notify driver on its own: the engine's transmissions go to an injected send, a full link
/// holds each subscription's newest value until it has room, and the timer is scheduled for the
/// engine's deadlines.
@Suite(.timeLimit(.minutes(1)), .onTheLoop)
struct NotifyDriverTests {
    /// What the driver sent, and whether the link takes more, per central.
    final class Link: @unchecked Sendable {
        struct Refused: Error {}
        private let lock = NSLock()
        private var sent: [String] = []
        private var full: Set<CentralID> = []
        private var failing = false
        private(set) var attempts = 0

        func send(_ transmission: Transmission<CentralID, CharacteristicRef>) throws -> Bool {
            try lock.withLock {
                attempts += 1
                if failing { throw Refused() }
                guard !full.contains(transmission.central) else { return false }
                let value = transmission.sample.value.numericValue.map { "\(Int($0))" } ?? "?"
                sent.append("\(transmission.central) \(transmission.characteristic) \(value)")
                return true
            }
        }
        func fill(_ central: CentralID) { lock.withLock { _ = full.insert(central) } }
        func free(_ central: CentralID) { lock.withLock { _ = full.remove(central) } }
        func failFromNowOn() { lock.withLock { failing = true } }
        /// What was sent since the last call.
        func take() -> [String] {
            lock.withLock {
                defer { sent = [] }
                return sent
            }
        }
    }

    let temperature = CharacteristicRef(service: 0, characteristic: 0, path: "env/temperature")
    let humidity = CharacteristicRef(service: 0, characteristic: 1, path: "env/humidity")
    let alice = CentralID(1)
    let bob = CentralID(2)
    let link = Link()
    let clock = TestClock()
    /// The store of current values the driver consults.
    let values: CharacteristicValues
    /// The triggers centrals wrote, as `TriggerSettings` tells the driver at a subscription.
    final class ServerTriggers {
        var byCharacteristic: [CharacteristicRef: TriggerSet] = [:]
    }
    let serverTriggers = ServerTriggers()

    static let yaml = """
        device: {name: driver}
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
            name: env
            characteristics:
              - {uuid: 2A6E, name: temperature, source: {sensor: climate, reading: temperature}}
              - {uuid: 2A6F, name: humidity, source: {sensor: climate, reading: humidity}}
        """

    init() throws {
        let layout = GATTLayout(config: try ConfigLoader.load(yaml: Self.yaml).config)
        values = CharacteristicValues(layout: layout, logger: Logger(label: "test"))
        #expect(layout.ref("env/temperature") == temperature && layout.ref("env/humidity") == humidity)
    }

    func driver(policy: NotifyPolicy = .immediate, timer: DeadlineTimer? = nil) -> NotifyDriver {
        let link = self.link
        let clock = self.clock
        return NotifyDriver(
            policies: [temperature: policy, humidity: policy], values: values,
            triggers: { [serverTriggers] in serverTriggers.byCharacteristic[$0] }, timer: timer,
            clock: { clock.now }, logger: Logger(label: "test"), send: { try link.send($0) })
    }

    /// `value` becomes `ref`'s current value and goes to `driver`, as the pipeline does it.
    func update(_ driver: NotifyDriver, _ ref: CharacteristicRef, _ value: Double) {
        values.set(sample(value), of: ref)
        driver.update(ref, sample: sample(value))
    }

    func sample(_ value: Double) -> NotifySample { NotifySample(value: .number(value), bytes: [UInt8(value)]) }

    @Test func eachSubscriberGetsEveryValueInCentralOrder() {
        let driver = driver()
        driver.subscribe(bob, to: temperature, kind: .notification)
        driver.subscribe(alice, to: temperature, kind: .notification)
        driver.subscribe(alice, to: humidity, kind: .notification)
        update(driver, temperature, 20)
        update(driver, humidity, 50)
        #expect(link.take().isEmpty, "nothing goes before the owner drains")
        driver.drain()
        #expect(
            link.take() == [
                "central#1 env/temperature 20", "central#1 env/humidity 50", "central#2 env/temperature 20"
            ])
        driver.unsubscribe(alice, from: humidity)
        update(driver, humidity, 51)
        driver.drain()
        #expect(link.take().isEmpty)
    }

    /// A refused transmission makes its central full: nothing more is offered to it until the link
    /// is ready, then only the newest value goes; the other central is served all along.
    @Test func aFullLinkKeepsTheNewestValueUntilReady() {
        let driver = driver()
        driver.subscribe(alice, to: temperature, kind: .notification)
        driver.subscribe(bob, to: temperature, kind: .notification)
        link.fill(alice)
        update(driver, temperature, 1)
        driver.drain()
        #expect(link.take() == ["central#2 env/temperature 1"])
        let attempts = link.attempts
        for value in 2...5 {
            update(driver, temperature, Double(value))
            driver.drain()
        }
        #expect(link.take() == (2...5).map { "central#2 env/temperature \($0)" })
        #expect(link.attempts == attempts + 4, "alice, full, is not offered anything meanwhile")
        link.free(alice)
        driver.linkReady()
        driver.drain()
        #expect(link.take() == ["central#1 env/temperature 5"], "only the newest, never a stale value first")
        #expect(driver.statistics.perCentral[alice]?.sent == 1)
        #expect(driver.statistics.perCentral[alice]?.coalesced == 4)
        #expect(driver.statistics.valuesWaiting == 0)
    }

    /// A transmission the peripheral refuses with an error is not retried and does not stop the
    /// link (the error is logged).
    @Test func aSendErrorDoesNotStallTheCentral() {
        let driver = driver()
        driver.subscribe(alice, to: temperature, kind: .notification)
        link.failFromNowOn()
        update(driver, temperature, 1)
        driver.drain()
        update(driver, temperature, 2)
        driver.drain()
        #expect(link.attempts == 2)
        #expect(driver.statistics.valuesWaiting == 0)
    }

    /// The GATT server queues indications behind the unconfirmed one, so the driver hands it every
    /// indication at once.
    @Test func indicationsGoOutBackToBack() {
        let driver = driver()
        driver.subscribe(alice, to: temperature, kind: .indication)
        driver.subscribe(alice, to: humidity, kind: .indication)
        update(driver, temperature, 20)
        update(driver, humidity, 50)
        driver.drain()
        #expect(link.take() == ["central#1 env/temperature 20", "central#1 env/humidity 50"])
    }

    /// The store's value is the one value: a value put there without going through the driver
    /// (as a central's write is, before the pipeline hears of it) is what a read gets, what the
    /// next heartbeat sends and what a new subscriber is offered.
    @Test func theStoresValueIsWhatReadsAndNotificationsSee() {
        let driver = driver(policy: NotifyPolicy(maxInterval: .seconds(1), currentValueOnSubscribe: true))
        driver.subscribe(alice, to: temperature, kind: .notification)
        update(driver, temperature, 20)
        driver.drain()
        #expect(link.take() == ["central#1 env/temperature 20"])
        values.set(sample(21), of: temperature)
        #expect(values.bytes(of: temperature) == [21])
        clock.advance(by: .seconds(1))
        driver.advance()
        #expect(link.take() == ["central#1 env/temperature 21"], "the heartbeat sends the store's value")
        driver.subscribe(bob, to: temperature, kind: .notification)
        driver.drain()
        #expect(link.take() == ["central#2 env/temperature 21"], "a new subscriber gets the store's value")
    }

    /// Triggers written for a characteristic apply to its subscribers now and to those that
    /// subscribe later; nil returns them to the configured policy. (All settings inactive: nothing
    /// is sent.)
    @Test func triggersApplyToSubscribersNowAndLater() {
        let driver = driver()
        driver.subscribe(alice, to: temperature, kind: .notification)
        serverTriggers.byCharacteristic[temperature] = TriggerSet([.inactive])
        driver.setTriggers(TriggerSet([.inactive]), on: temperature)
        driver.subscribe(bob, to: temperature, kind: .notification)
        update(driver, temperature, 20)
        driver.drain()
        #expect(link.take().isEmpty)
        serverTriggers.byCharacteristic[temperature] = nil
        driver.setTriggers(nil, on: temperature)
        update(driver, temperature, 21)
        driver.drain()
        #expect(link.take() == ["central#1 env/temperature 21", "central#2 env/temperature 21"])
    }

    /// A disconnected central's waiting value is dropped and it is not full any more when it comes
    /// back on the same id.
    @Test func aDisconnectForgetsTheCentral() {
        let driver = driver()
        driver.subscribe(alice, to: temperature, kind: .notification)
        link.fill(alice)
        update(driver, temperature, 1)
        driver.drain()
        driver.disconnect(alice)
        link.free(alice)
        driver.subscribe(alice, to: temperature, kind: .notification)
        update(driver, temperature, 2)
        driver.drain()
        #expect(link.take() == ["central#1 env/temperature 2"])
    }

    /// A value held by the minimum interval goes at the interval's end: on the manual clock when the
    /// owner advances, and the timer is scheduled for that moment (the driver's clock is the loop's).
    @Test func heldValuesGoAtTheirDeadline() async throws {
        let (fired, fire) = AsyncStream.makeStream(of: LoopInstant.self)
        let timer = DeadlineTimer { _ in fire.yield(EventLoop.now()) }
        let start = clock.now
        let driver = driver(policy: NotifyPolicy(minInterval: .milliseconds(200)), timer: timer)
        driver.subscribe(alice, to: temperature, kind: .notification)
        update(driver, temperature, 1)
        update(driver, temperature, 2)
        driver.drain()
        #expect(link.take() == ["central#1 env/temperature 1"])
        #expect(driver.nextDeadline == start + .milliseconds(200))
        var wakeUps = fired.makeAsyncIterator()
        let firedAt = try #require(await wakeUps.next())
        #expect(firedAt - start >= .milliseconds(200), "not before the deadline")
        clock.advance(by: .milliseconds(150))
        driver.advance()
        #expect(link.take().isEmpty)
        clock.advance(by: .milliseconds(50))
        driver.advance()
        #expect(link.take() == ["central#1 env/temperature 2"])
        #expect(driver.nextDeadline == nil)
        driver.stop()
    }
}
