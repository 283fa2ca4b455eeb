import BluetoothGATT
import Testing

@testable import Gateway
@testable import Notify

/// MQTT's `state` counters on their own: the notify counters in total, per characteristic and per
/// central, lost GPIO events per sensor and in total, the peripheral's state and advertising.
struct PipelineStatusTests {
    let temperature = CharacteristicRef(service: 0, characteristic: 0, path: "env/temperature")
    let humidity = CharacteristicRef(service: 0, characteristic: 1, path: "env/humidity")

    func counters(sent: Int, coalesced: Int = 0, suppressed: Int = 0, dropped: Int = 0) -> NotifyCounters {
        var counters = NotifyCounters()
        counters.sent = sent
        counters.coalesced = coalesced
        counters.suppressed = suppressed
        counters.dropped = dropped
        return counters
    }

    @Test func countersAreSummedAndNamed() {
        var status = PipelineStatus()
        status.peripheralChanged(.poweredOn)
        status.lostEvents(sensor: "door", total: 3)
        status.lostEvents(sensor: "meter", total: 1)
        status.lostEvents(sensor: "door", total: 5)
        let statistics = NotifyStatistics<CentralID, CharacteristicRef>(
            perCharacteristic: [
                temperature: counters(sent: 4, coalesced: 2), humidity: counters(sent: 1, suppressed: 3, dropped: 1)
            ],
            perCentral: [CentralID(1): counters(sent: 5, coalesced: 2)], valuesWaiting: 1)
        #expect(
            status.event(statistics)
                == .status(
                    peripheral: "poweredOn", advertising: false,
                    counters: [
                        "centrals": 1, "waiting": 1, "lost_events": 6, "write_commands_refused": 0, "door.lost_events": 5,
                        "meter.lost_events": 1,
                        "sent": 5, "coalesced": 2, "suppressed": 3, "dropped": 1,
                        "env/temperature.sent": 4, "env/temperature.coalesced": 2, "env/temperature.suppressed": 0,
                        "env/temperature.dropped": 0,
                        "env/humidity.sent": 1, "env/humidity.coalesced": 0, "env/humidity.suppressed": 3,
                        "env/humidity.dropped": 1,
                        "central#1.sent": 5, "central#1.coalesced": 2, "central#1.suppressed": 0, "central#1.dropped": 0
                    ]))
    }

    /// Advertising is news only when it changes (the pipeline sends a status event then).
    @Test func advertisingIsReportedWhenItChanges() {
        var status = PipelineStatus()
        let reported = [false, true, true].map { status.advertisingChanged($0) }
        #expect(reported == [false, true, false])
        let empty = NotifyStatistics<CentralID, CharacteristicRef>(perCharacteristic: [:], perCentral: [:], valuesWaiting: 0)
        #expect(
            status.event(empty)
                == .status(
                    peripheral: "unknown", advertising: true,
                    counters: [
                        "centrals": 0, "waiting": 0, "lost_events": 0, "write_commands_refused": 0, "sent": 0, "coalesced": 0,
                        "suppressed": 0, "dropped": 0
                    ]))
        let stopped = status.advertisingChanged(false)
        #expect(stopped)
    }
}
