import BluetoothGATT
import Notify

/// What MQTT's `state` topic (and `gattway status`) says about the gateway: the peripheral's
/// state, whether it advertises, lost GPIO events, and the notify counters. Pure: it keeps the
/// inputs that are not counters and formats a `status` event from the counters of the moment.
struct PipelineStatus {
    private(set) var peripheralState = PeripheralState.unknown
    private(set) var advertising = false
    /// Whether new centrals may pair now (a pairing window is open, or pairing is open at all times).
    private(set) var pairing = false
    /// Lost GPIO events per sensor (their running totals).
    private var lostEventTotals: [String: Int] = [:]
    /// Write Commands (writes without response) that could not be applied: they get no answer.
    private var writeCommandsRefused = 0
    /// The sensors whose readings are not current, with why (`SensorHealth`).
    private(set) var unavailableSensors: [String: String] = [:]

    /// The peripheral's new state.
    mutating func peripheralChanged(_ state: PeripheralState) {
        peripheralState = state
    }

    /// Whether advertising is now `isAdvertising`; false when it already was (nothing to say).
    mutating func advertisingChanged(_ isAdvertising: Bool) -> Bool {
        guard isAdvertising != advertising else { return false }
        advertising = isAdvertising
        return true
    }

    /// A sensor is unavailable for `reason`, or available again (nil); false when nothing changed.
    mutating func sensorAvailability(sensor: String, unavailable reason: String?) -> Bool {
        guard unavailableSensors[sensor] != reason else { return false }
        unavailableSensors[sensor] = reason
        return true
    }

    /// A central's Write Command could not be applied.
    mutating func writeCommandRefused() {
        writeCommandsRefused += 1
    }

    /// Whether pairing is now `isOpen`; false when it already was.
    mutating func pairingChanged(_ isOpen: Bool) -> Bool {
        guard isOpen != pairing else { return false }
        pairing = isOpen
        return true
    }

    /// A sensor's running total of lost GPIO events.
    mutating func lostEvents(sensor: String, total: Int) {
        lostEventTotals[sensor] = total
    }

    /// The `status` event: totals (`sent`, `coalesced`, `suppressed`, `dropped`, `centrals`,
    /// `waiting`, `lost_events`), then each counter per characteristic
    /// (`<service>/<characteristic>.sent`), per connected central (`central#1.sent`) and per
    /// sensor (`<sensor>.lost_events`).
    func event(_ statistics: NotifyStatistics<CentralID, CharacteristicRef>) -> PipelineEvent {
        let fields: [(String, KeyPath<NotifyCounters, Int>)] = [
            ("sent", \.sent), ("coalesced", \.coalesced), ("suppressed", \.suppressed), ("dropped", \.dropped)
        ]
        var counters = [
            "centrals": statistics.perCentral.count, "waiting": statistics.valuesWaiting,
            "lost_events": lostEventTotals.values.reduce(0, +), "write_commands_refused": writeCommandsRefused
        ]
        for (sensor, total) in lostEventTotals { counters["\(sensor).lost_events"] = total }
        for (name, path) in fields {
            counters[name] = statistics.perCharacteristic.values.reduce(0) { $0 + $1[keyPath: path] }
            for (ref, values) in statistics.perCharacteristic { counters["\(ref).\(name)"] = values[keyPath: path] }
            for (central, values) in statistics.perCentral { counters["\(central).\(name)"] = values[keyPath: path] }
        }
        return .status(
            peripheral: peripheralState.rawValue, advertising: advertising, counters: counters, pairing: pairing,
            unavailable: unavailableSensors)
    }
}
