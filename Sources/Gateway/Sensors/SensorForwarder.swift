import BluetoothHost
import EventLoop
import Logging
import Sensors

/// Hands each reading of one sensor to the pipeline, to BTHome, and to the host when the sensor
/// confirms Numeric Comparison or opens the pairing window.
///
/// Why an actor on the event loop, called synchronously: the runner delivers on the loop, and the
/// pipeline and the advertiser share that executor, so a reading reaches the notification it
/// causes in one call chain: no task, stream or executor hop per reading.
actor SensorForwarder {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    private let sensor: String
    private let pipeline: ValuePipeline
    private let bthome: BTHomeAdvertiser?
    private let host: PeripheralHost
    private let logger: Logger
    private var confirmButton: ConfirmButton?
    private var pairButton: PairButton?
    /// How long a long press of `pairButton` opens the pairing window.
    private let pairingWindow: Duration
    private var lostEvents: LostEventsLog

    /// `confirms`: this sensor is `bluetooth.security.confirm_with`; `pairButton`: it is
    /// `pair_with`, and a long press opens the pairing window for `pairingWindow`.
    init(
        sensor: String, pipeline: ValuePipeline, bthome: BTHomeAdvertiser?, host: PeripheralHost,
        confirms: Bool, pairButton: PairButton? = nil, pairingWindow: Duration = .zero, logger: Logger
    ) {
        self.pairButton = pairButton
        self.pairingWindow = pairingWindow
        self.sensor = sensor
        self.pipeline = pipeline
        self.bthome = bthome
        self.host = host
        self.logger = logger
        confirmButton = confirms ? ConfirmButton() : nil
        lostEvents = LostEventsLog(sensor: sensor)
    }

    /// The runner's consumer (`SensorRunner.run(delivering:)`), called on the event loop.
    nonisolated func deliver(_ value: SensorSample) {
        onLoop(with: value) { $0.forward($1) }
    }

    private func forward(_ value: SensorSample) {
        if value.role == .lostEvents, let number = value.number {
            let total = Int(number)
            if let line = lostEvents.record(total: total, at: EventLoop.now()) { logger.warning("\(line)") }
            pipeline.onLoop(with: (sensor, total)) { $0.lostEvents(sensor: $1.0, total: $1.1) }
            return
        }
        if value.role == .availability {
            var reason: String?
            if case .failure(let failure) = value.reading { reason = failure.description }
            pipeline.onLoop(with: (sensor, reason)) { $0.sensorAvailability(sensor: $1.0, unavailable: $1.1) }
            return
        }
        pipeline.onLoop(with: value) { $0.sensorValue($1) }
        bthome?.onLoop(with: value) { $0.reading($1) }
        // Tested for nil first: the optional chain on its own went through each property's modify
        // accessor for every value, about twenty instructions, for a sensor that is neither button.
        if confirmButton != nil, confirmButton!.isPress(value) {
            host.onLoop { $0.confirmNumericComparison() }
        }
        if pairButton != nil, pairButton!.isLongPress(value) {
            host.onLoop(with: (pairingWindow, sensor)) { $0.openPairingWindow(for: $1.0, reason: "\($1.1) held") }
        }
    }
}
