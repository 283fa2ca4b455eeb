import Testing

@testable import MQTTMirror
@testable import MQTTService

/// `BacklogHold`: while the broker is behind, one message per topic (the newest), released oldest
/// topic first as the broker takes them.
@Suite struct BacklogHoldTests {
    static func message(_ topic: String, _ text: String) -> MQTTMessage { MQTTMessage(topic: topic, text: text, retain: true) }

    @Test func keepsTheNewestOfEachTopicInTheOrderTopicsBeganToWait() {
        var hold = BacklogHold()
        let started = [
            hold.hold(Self.message("a", "1")), hold.hold(Self.message("b", "1")), hold.hold(Self.message("a", "2")),
            hold.hold(Self.message("a", "3"))
        ]
        #expect(started == [true, false, false, false], "only the first message held starts the hold")
        #expect(hold.count == 2)
        #expect(hold.superseded == 2)
        var published: [String] = []
        let superseded = hold.release(while: { true }, to: { published.append("\($0.topic)=\($0.text!)") })
        #expect(superseded == 2)
        #expect(published == ["a=3", "b=1"])
        #expect(hold.isEmpty)
        #expect(hold.superseded == 0, "counted afresh for the next hold")
        let startedAnew = hold.hold(Self.message("c", "1"))
        #expect(startedAnew, "a hold after the last one released starts anew")
    }

    @Test func releasesOnlyWhatTheBrokerTakesAndKeepsTheRestInOrder() {
        var hold = BacklogHold()
        for topic in ["a", "b", "c"] { _ = hold.hold(Self.message(topic, "1")) }
        var budget = 1
        var published: [String] = []
        let remaining = hold.release(
            while: { budget > 0 },
            to: {
                published.append($0.topic)
                budget -= 1
            })
        #expect(remaining == nil, "still holding")
        #expect(published == ["a"])
        _ = hold.hold(Self.message("a", "2"))
        budget = 10
        #expect(
            hold.release(
                while: { budget > 0 },
                to: {
                    published.append($0.topic)
                    budget -= 1
                }) == 0)
        #expect(published == ["a", "b", "c", "a"], "a began to wait again after b and c")
    }

    @Test func aNewConnectionDropsEverythingHeld() {
        var hold = BacklogHold()
        _ = hold.hold(Self.message("a", "1"))
        _ = hold.hold(Self.message("a", "2"))
        hold.drop()
        #expect(hold.isEmpty)
        #expect(hold.superseded == 0)
        var published = 0
        let supersededAfterDrop = hold.release(while: { true }, to: { _ in published += 1 })
        #expect(supersededAfterDrop == 0)
        #expect(published == 0)
    }
}
