/// Topic names of the mirror. `<root>` is `<base>/<dev>`.
public struct MirrorTopics: Sendable, Equatable {
    public let root: String

    public init(baseTopic: String, deviceID: String) {
        root = "\(baseTopic)/\(deviceID)"
    }

    /// `online` / `offline`, retained; the Last Will says `offline`.
    public var availability: String { "\(root)/availability" }
    /// Peripheral state JSON, retained.
    public var state: String { "\(root)/state" }
    /// Rejected `/set` payloads.
    public var error: String { "\(root)/error" }
    /// Passkey Entry: the passkey to type on the pairing central; not retained.
    public var pairing: String { "\(root)/pairing" }

    /// An unretained message of the device's own, which tells it that the retained messages of its
    /// subscriptions before have arrived (`DiscoverySurvey`).
    public var discoverySurvey: String { "\(root)/discovery-survey" }

    public func value(_ id: MirrorCharacteristicID) -> String { "\(root)/\(id.service)/\(id.characteristic)" }
    public func set(_ id: MirrorCharacteristicID) -> String { "\(value(id))/set" }
    public func written(_ id: MirrorCharacteristicID) -> String { "\(value(id))/written" }
    public func subscribers(_ id: MirrorCharacteristicID) -> String { "\(value(id))/subscribers" }
    /// `online` / `offline`, retained: whether the value is current (its sensor answers).
    public func availability(_ id: MirrorCharacteristicID) -> String { "\(value(id))/availability" }
    public func central(_ address: String) -> String { "\(root)/centrals/\(address)" }

    /// The service name reserved for `<root>/centrals/<address>`.
    static let reservedService = "centrals"

    /// Checks one topic level we build from configuration names.
    static func validateLevel(_ level: String, _ what: String) throws {
        if level.isEmpty { throw MQTTError.invalidConfiguration("\(what) is empty") }
        if let bad = level.first(where: { "/+#\u{0}".contains($0) }) {
            throw MQTTError.invalidConfiguration("\(what) '\(level)' contains '\(bad)', which cannot appear in an MQTT topic level")
        }
    }

    /// Checks a base topic or a source topic: non-empty levels, no wildcards.
    static func validateTopic(_ topic: String, _ what: String) throws {
        for level in topic.split(separator: "/", omittingEmptySubsequences: false) {
            try validateLevel(String(level), "\(what) '\(topic)': a level")
        }
    }
}
