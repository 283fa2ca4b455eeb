import FoundationEssentials

/// What the broker holds of this device's Home Assistant discovery, learnt when gattway has no
/// record of what it published (a first start, a fresh card, a wiped state directory): the
/// components of the retained device document, and the per-entity documents of earlier gattway
/// versions still retained. Guessing instead misfires both ways: migrating per-entity topics that
/// are long gone sends `migrate_discovery` to the discovery id of a device document's entity (Home
/// Assistant warns of a conflict), and a document published afresh without the components the
/// configuration has lost since leaves their entities on the device with stale values.
///
/// The broker sends a subscription's retained messages right after its SUBACK, in order with what
/// it sends the connection next. So the survey subscribes to the device document (the per-entity
/// topics are an inbound subscription already) and to a marker topic of the device's own, then
/// publishes one message there, unretained: when it comes back, everything retained has arrived.
/// A broker that holds nothing costs one round trip; `timeout` bounds a marker that never comes
/// back (a broker whose ACL drops it).
public struct DiscoverySurvey: Sendable {
    let discovery: HomeAssistantDiscovery
    public let markerTopic: String
    /// The components the retained device document lists (`cmps`), removals included.
    public private(set) var components: Set<HomeAssistantComponent> = []
    /// The per-entity topics with a retained document.
    public private(set) var perEntityTopics: Set<String> = []
    /// The marker came back: every retained message has arrived.
    public private(set) var isComplete = false

    /// How long to wait for the marker before going on with what has arrived.
    public static let timeout: Duration = .seconds(3)

    init(discovery: HomeAssistantDiscovery, markerTopic: String) {
        self.discovery = discovery
        self.markerTopic = markerTopic
    }

    /// Subscribed to once the inbound subscriptions are: the device document and the marker.
    public var subscriptions: [String] { [discovery.deviceTopic, markerTopic].compactMap { $0 } }

    /// Published after `subscriptions`.
    public var marker: MQTTMessage { MQTTMessage(topic: markerTopic, payload: []) }

    /// Notes what `message` says of the broker's discovery; true when it was the survey's alone
    /// (the device document, the marker), false for every other (a per-entity document is still
    /// routed as usual, which clears it when stale).
    public mutating func take(_ message: MQTTMessage) -> Bool {
        if message.topic == markerTopic {
            if !message.retain { isComplete = true }
            return true
        }
        guard message.retain, !message.payload.isEmpty else { return false }
        if message.topic == discovery.deviceTopic {
            components = Self.components(ofDocument: message.payload)
            return true
        }
        if discovery.isPerEntityTopic(message.topic) { perEntityTopics.insert(message.topic) }
        return false
    }

    /// The components of a device document: each key of `cmps` (`components` unabbreviated)
    /// with its `p` (`platform`). None when it is not a device document.
    static func components(ofDocument payload: [UInt8]) -> Set<HomeAssistantComponent> {
        guard let document = try? JSONDecoder().decode(DeviceDocument.self, from: Data(payload)) else { return [] }
        return Set(
            (document.cmps ?? document.components ?? [:]).compactMap { id, component in
                (component.p ?? component.platform).map { HomeAssistantComponent(platform: $0, id: id) }
            })
    }

    private struct DeviceDocument: Decodable {
        struct Component: Decodable {
            let p: String?
            let platform: String?
        }
        let cmps: [String: Component]?
        let components: [String: Component]?
    }
}
