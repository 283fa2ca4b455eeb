import LoopClock
import Testing

@testable import Gateway

/// Lost GPIO events are logged: the first loss at once, then at most once a minute with the
/// count since the last line, the rate and the total.
@Suite struct LostEventsLogTests {
    @Test func theFirstLossAtOnceThenOneLineAMinuteWithTheRate() {
        var log = LostEventsLog(sensor: "flow")
        let start = LoopInstant(nanoseconds: 1_000_000_000)
        #expect(log.record(total: 0, at: start) == nil, "nothing lost")
        #expect(
            log.record(total: 12, at: start)
                == "sensor flow lost 12 GPIO events (12 since start): the line changes faster than gattway reads it, so counts and the edges in between are missing"
        )
        #expect(log.record(total: 40, at: start + .seconds(30)) == nil, "not within the minute")
        #expect(
            log.record(total: 132, at: start + .seconds(60))
                == "sensor flow lost 120 GPIO events in the last 60 s (2.0/s, 132 since start): the line changes faster than gattway reads it"
        )
        #expect(log.record(total: 132, at: start + .seconds(200)) == nil, "no new loss, no line")
    }
}
