import BluetoothGATT
import Logging
import LoopClock
import Notify
import Values

/// What the pipeline tells of itself: sensors' availability, the counters, the `status` event.
extension ValuePipeline {
    /// A sensor's readings stopped being current (`reason`), or are again (nil): every
    /// characteristic carrying it is marked so for MQTT (its availability), and the notify
    /// heartbeat stops resending the value it has until a new one comes.
    public func sensorAvailability(sensor: String, unavailable reason: String?) {
        guard status.sensorAvailability(sensor: sensor, unavailable: reason) else { return }
        if let reason {
            logger.warning("sensor unavailable", metadata: ["sensor": "\(sensor)", "reason": "\(reason)"])
        } else {
            logger.notice("sensor available again", metadata: ["sensor": "\(sensor)"])
        }
        for ref in router.characteristics(carrying: sensor) {
            if reason != nil { notifier.markStale(ref) }
            eventSink?(.availabilityChanged(ref, unavailable: reason))
        }
        eventSink?(statusEvent)
    }

    /// Why each unavailable sensor is, by sensor.
    public var unavailableSensors: [String: String] { status.unavailableSensors }

    /// A sensor's running total of lost GPIO events, for the `state` counters
    /// (`<sensor>.lost_events`, and `lost_events` over all sensors).
    public func lostEvents(sensor: String, total: Int) {
        status.lostEvents(sensor: sensor, total: total)
    }

    /// The per-characteristic and per-central counters, for the log line and MQTT `state`.
    public var statistics: NotifyStatistics<CentralID, CharacteristicRef> { notifier.statistics }

    /// When the engine next has work.
    public var nextDeadline: LoopInstant? { notifier.nextDeadline }

    /// The pairing window opened or closed (for the `status` event).
    public func pairingWindowChanged(_ isOpen: Bool) {
        if status.pairingChanged(isOpen) { eventSink?(statusEvent) }
    }

    /// The host started or stopped advertising (for the `status` event).
    public func advertisingChanged(_ isAdvertising: Bool) {
        if status.advertisingChanged(isAdvertising) { eventSink?(statusEvent) }
    }

    public func logStatistics() {
        logger.info("notify counters", metadata: ["counters": "\(notifier.statistics.logLine)"])
        eventSink?(statusEvent)
    }

    /// The `status` event now (`PipelineStatus`).
    var statusEvent: PipelineEvent { status.event(notifier.statistics) }

    /// The characteristics whose sensor is unavailable now, with why (a mirror that starts after
    /// the sensor went stale learns it here).
    public var unavailableCharacteristics: [(CharacteristicRef, String)] {
        status.unavailableSensors.sorted { $0.key < $1.key }.flatMap { sensor, reason in
            router.characteristics(carrying: sensor).map { ($0, reason) }
        }
    }
}
