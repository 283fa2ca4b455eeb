import BluetoothATT
import BluetoothCore
import BluetoothGATT
import Config
import EventLoop
import Foundation
import Gateway
import Logging
import LoopClock
import Sensors

/// The host side of the peripheral, in memory: every PDU the peripheral sends, per central.
final class RecordingLink: PeripheralLink, @unchecked Sendable {
    private let lock = NSLock()
    /// Each PDU with when it was sent (`EventLoop.now()`).
    private var sent: [(CentralID, [UInt8], UInt64)] = []

    func send(_ pdu: [UInt8], to central: CentralID) { lock.withLock { sent.append((central, pdu, EventLoop.now().nanoseconds)) } }
    func sendUpdate(_ update: ATTUpdate, to central: CentralID) {
        lock.withLock { sent.append((central, update.encoded, EventLoop.now().nanoseconds)) }
    }
    func disconnectAfterTransactionTimeout(_ central: CentralID) {}
    func requestConnectionLatency(_ latency: ConnectionLatency, for central: CentralID) {}

    /// PDUs sent to `central` since the last call.
    func take(_ central: CentralID) -> [[UInt8]] {
        takeWithTimes(central).map(\.pdu)
    }

    /// PDUs sent to `central` since the last call, each with when it was sent.
    func takeWithTimes(_ central: CentralID) -> [(pdu: [UInt8], sentNs: UInt64)] {
        lock.withLock {
            let mine = sent.filter { $0.0 == central }.map { ($0.1, $0.2) }
            sent.removeAll { $0.0 == central }
            return mine
        }
    }
}

/// A clock the test moves by hand, shared by the peripheral and the pipeline.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current = EventLoop.now()
    var now: LoopInstant { lock.withLock { current } }
    func advance(by duration: Duration) { lock.withLock { current += duration } }
}

/// Records what the pipeline asks of output sensors.
final class OutputRecorder: @unchecked Sendable {
    struct LineFailure: Error, CustomStringConvertible {
        var description: String { "the line is gone" }
    }
    private let lock = NSLock()
    private var writes: [String] = []
    private var failing = false
    /// From now on, driving a line fails (as a GPIO backend whose chip went away would).
    func failFromNowOn() { lock.withLock { failing = true } }
    func record(_ sensor: String, _ level: Bool) throws {
        try lock.withLock {
            if failing { throw LineFailure() }
            writes.append("\(sensor)=\(level)")
        }
    }
    var all: [String] { lock.withLock { writes } }
}

/// A configuration published on an in-memory peripheral with a value pipeline on a manual clock.
struct PipelineFixture {
    let link = RecordingLink()
    let clock = TestClock()
    let outputs = OutputRecorder()
    let peripheral: Peripheral
    let pipeline: ValuePipeline
    let layout: GATTLayout
    /// What the pipeline handed its event sink, as the mirror gets it: values and status here,
    /// the events the mirror keeps in its outbox (writes, centrals, subscriptions) in
    /// `durableEvents`; both end at `finish()`.
    var pipelineEvents: AsyncStream<PipelineEvent>.Iterator
    var durableEvents: AsyncStream<PipelineEvent>.Iterator
    /// Ends both event streams (`finish()` does, after the pipeline's).
    let endEvents: @Sendable () -> Void

    /// The pipeline's warnings and errors, as the journal would get them.
    let warnings = LockedLines()

    /// `.realTime` runs the pipeline's own timer on the real clock (the service's setting).
    /// `triggerFile`: where written trigger settings are kept (none: this run only).
    init(yaml: String, timing: ValuePipeline.Timing = .manual, triggerFile: TriggerFile? = nil) async throws {
        let config = try ConfigLoader.load(yaml: yaml).config
        layout = GATTLayout(config: config)
        let clock = self.clock
        let realTime = timing == .realTime
        let now: @Sendable () -> LoopInstant = { realTime ? EventLoop.now() : clock.now }
        peripheral = Peripheral(configuration: .init(deviceName: config.device.name), link: link, now: now)
        let outputs = self.outputs
        pipeline = ValuePipeline(
            layout: layout, peripheral: peripheral,
            timing: timing, clock: now, triggerFile: triggerFile,
            logger: Logger(label: "test") { [warnings] label in
                GatewayLogHandler(label: label, level: .warning, style: .journal, write: { warnings.append($0) })
            },
            driveOutput: { sensor, level in try outputs.record(sensor, level) })
        let (values, valueContinuation) = AsyncStream.makeStream(of: PipelineEvent.self)
        let (durable, durableContinuation) = AsyncStream.makeStream(of: PipelineEvent.self)
        pipelineEvents = values.makeAsyncIterator()
        durableEvents = durable.makeAsyncIterator()
        endEvents = {
            valueContinuation.finish()
            durableContinuation.finish()
        }
        await pipeline.setEventSink { event in
            switch event {
            case .valueChanged, .status: valueContinuation.yield(event)
            default: durableContinuation.yield(event)
            }
        }
        await pipeline.attach()
        await peripheral.updateState(.poweredOn)
    }

    func ref(_ path: String) -> CharacteristicRef { layout.ref(path)! }

    /// Finishes the pipeline, and then the event streams.
    func finish() async {
        await pipeline.finish()
        endEvents()
    }

    func characteristic(_ path: String) async -> PublishedCharacteristic {
        await pipeline.publishedCharacteristic(ref(path))!
    }

    /// Connects `central` and enables notifications on `path`; returns the values notified at
    /// once (the current value, under `notify.on_subscribe`).
    @discardableResult
    func subscribe(_ central: CentralID, to path: String) async -> [[UInt8]] {
        let characteristic = await characteristic(path)
        await peripheral.centralConnected(central)
        await peripheral.receive([0x12] + le(characteristic.clientConfigurationHandle!) + [0x01, 0x00], from: central)
        return await notifications(central, on: path)
    }

    /// Values of the notifications `central` received on `path` since the last call. The link
    /// delivers what the test takes: the peripheral hears of it (`updatesDelivered`), as from the
    /// host when the controller has sent them.
    func notifications(_ central: CentralID, on path: String) async -> [[UInt8]] {
        let handle = await characteristic(path).valueHandle
        let taken = link.take(central)
        let updates = taken.filter { $0.first == 0x1B || $0.first == 0x1D }
        if !updates.isEmpty { await peripheral.updatesDelivered(updates.count, to: central) }
        return taken.filter { $0.first == 0x1B && Array($0[1...2]) == le(handle) }.map { Array($0.dropFirst(3)) }
    }

    /// Moves the clock and lets the pipeline handle what fell due.
    func advance(by duration: Duration) async {
        clock.advance(by: duration)
        await pipeline.advance()
    }
}

func le(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

func reading(_ sensor: String, _ channel: String = "value", _ number: Double) -> SensorSample {
    SensorSample(sensor: sensor, channel: channel, reading: .number(number), timestampNs: 0)
}

/// sint16 little-endian, as Temperature (exponent -2) carries it.
func sint16(_ value: Int16) -> [UInt8] { le(UInt16(bitPattern: value)) }
