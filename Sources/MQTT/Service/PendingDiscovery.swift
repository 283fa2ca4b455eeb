import MQTTMirror

/// Home Assistant discovery on a connection without a record of what was published: the survey
/// under way (`DiscoverySurvey`) and its timeout, until the marker is back, the time is up or the
/// connection ends. Discovery is published once, when it ends, after what the survey found.
struct PendingDiscovery {
    private(set) var survey: DiscoverySurvey?
    private var timeout: Task<Void, Never>?

    var isUnderWay: Bool { survey != nil }

    /// What an inbound message was to the survey.
    enum Take: Equatable {
        /// Not the survey's (or none under way): routed as usual.
        case notTheSurveys
        case taken
        /// The marker came back: everything retained has arrived.
        case complete
    }

    /// `timeout` ends the survey when the marker does not come back in time.
    mutating func begin(_ survey: DiscoverySurvey, timeout: Task<Void, Never>) {
        self.timeout?.cancel()
        self.survey = survey
        self.timeout = timeout
    }

    mutating func take(_ message: MQTTMessage) -> Take {
        guard survey?.take(message) == true else { return .notTheSurveys }
        return survey?.isComplete == true ? .complete : .taken
    }

    /// Ends the survey and its timeout; the survey, nil when none was under way.
    mutating func end() -> DiscoverySurvey? {
        defer {
            survey = nil
            timeout?.cancel()
            timeout = nil
        }
        return survey
    }
}
