import Logging
import MQTTMirror

/// What the service does with a message on a topic the mirror subscribed (`Mirror.route`): a
/// `/set` payload goes to the gateway to validate and apply, a source topic's payload to the
/// characteristics taking their value from it, Home Assistant's birth schedules discovery again,
/// and what an earlier run left retained is cleared or corrected.
struct InboundRouting: Sendable {
    /// What the service does next.
    enum Reply: Equatable {
        case nothing
        /// The gateway rejected a `/set` payload: the reason goes out on `<base>/<dev>/error`.
        case reject(MirrorCharacteristicID, reason: String)
        case publish(MQTTMessage)
        /// Publish discovery again after this long.
        case republishDiscovery(after: Duration)
    }

    let onSet: MQTTMirrorService.SetHandler
    let onSourceValue: MQTTMirrorService.SourceHandler
    /// How long to wait after Home Assistant's birth message before publishing discovery again.
    let birthDelay: @Sendable () -> Duration
    let logger: Logger

    /// What the service does at once; nil for a `/set` or source payload, which the gateway's
    /// handler decides (`ask`).
    func route(_ inbound: MirrorInbound) -> Reply? {
        switch inbound {
        case .set, .sourceValue:
            return nil
        case .homeAssistantOnline:
            let delay = birthDelay()
            logger.info("Home Assistant came online: re-publishing discovery in \(delay)")
            return .republishDiscovery(after: delay)
        case .stalePerEntityDiscovery(let topic):
            logger.info("clearing the per-entity Home Assistant discovery left on \(topic)")
            return .publish(MQTTMessage(topic: topic, payload: [], retain: true))
        case .staleRetained(let correction):
            logger.info("correcting \(correction.topic), left retained by an earlier run")
            return .publish(correction)
        case .ignored:
            return .nothing
        }
    }

    /// A `/set` or source payload through the gateway's handler (what `route` answers nil for).
    /// Runs on the caller's actor (the service's, on the event loop): no hop of its own.
    func ask(_ inbound: MirrorInbound, isolation: isolated (any Actor)? = #isolation) async -> Reply {
        switch inbound {
        case .set(let id, let payload):
            guard case .rejected(let reason) = await onSet(id, payload) else { return .nothing }
            logger.warning("MQTT /set for \(id) rejected: \(reason)")
            return .reject(id, reason: reason)
        case .sourceValue(let ids, let payload):
            await onSourceValue(ids, payload)
            return .nothing
        default:
            return route(inbound) ?? .nothing
        }
    }
}
