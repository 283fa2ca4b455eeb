import Testing

@testable import MQTTMirror
@testable import MQTTService

/// `PendingDiscovery`: the survey of a connection without a record of the discovery published
/// takes the device document and its marker, completes when the marker is back, and ends (with
/// its timeout) once.
@Suite struct PendingDiscoveryTests {
    static func survey() throws -> DiscoverySurvey {
        try #require(try Mirror(configuration: sampleConfiguration()).discoverySurvey)
    }

    static func sleeper() -> Task<Void, Never> { Task { try? await Task.sleep(for: .seconds(60)) } }

    @Test func takesOnlyTheSurveysMessagesAndCompletesWithTheMarker() throws {
        var pending = PendingDiscovery()
        let survey = try Self.survey()
        let marker = survey.marker
        let beforeBegin = pending.take(marker)
        #expect(beforeBegin == .notTheSurveys, "no survey under way")
        pending.begin(survey, timeout: Self.sleeper())
        #expect(pending.isUnderWay)
        let otherTopic = pending.take(MQTTMessage(topic: "gattway/other", text: "1"))
        #expect(otherTopic == .notTheSurveys)
        let retainedMarker = pending.take(MQTTMessage(topic: marker.topic, payload: [], retain: true))
        #expect(retainedMarker == .taken, "a retained marker is an old one")
        let markerBack = pending.take(marker)
        #expect(markerBack == .complete)
        let ended = pending.end()
        #expect(ended != nil)
        #expect(!pending.isUnderWay)
        let endedAgain = pending.end()
        #expect(endedAgain == nil, "ended once")
    }

    @Test func endingCancelsTheTimeout() throws {
        var pending = PendingDiscovery()
        let timeout = Self.sleeper()
        pending.begin(try Self.survey(), timeout: timeout)
        _ = pending.end()
        #expect(timeout.isCancelled)
    }
}
