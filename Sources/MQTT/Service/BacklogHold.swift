import MQTTMirror

/// While the broker is behind (`MQTTClient.isBehind`): the newest message of each topic of state
/// (values, `state`, discovery) waiting for it to catch up, in the order the topics began to
/// wait, and how many messages a newer one replaced meanwhile. So a broker that is connected but
/// slow holds gattway's memory to one message per topic, and gets the newest state first when it
/// catches up. Durable events are never held: the outbox bounds them.
struct BacklogHold {
    private var held: [String: MQTTMessage] = [:]
    private var topics: [String] = []
    /// Messages a newer one of the same topic replaced since the hold began.
    private(set) var superseded = 0

    var isEmpty: Bool { held.isEmpty }
    /// Messages held: at most one per topic.
    var count: Int { held.count }

    /// Keeps `message` as its topic's newest; true when it is the first message held.
    mutating func hold(_ message: MQTTMessage) -> Bool {
        let first = held.isEmpty
        if held.updateValue(message, forKey: message.topic) == nil {
            topics.append(message.topic)
        } else {
            superseded += 1
        }
        return first
    }

    /// Hands the held messages to `publish`, oldest topic first, while `canSend` says the broker
    /// takes more; returns how many were superseded when the hold is empty, nil while it is not.
    mutating func release(while canSend: () -> Bool, to publish: (MQTTMessage) -> Void) -> Int? {
        var sent = 0
        while sent < topics.count, canSend() {
            let topic = topics[sent]
            sent += 1
            if let message = held.removeValue(forKey: topic) { publish(message) }
        }
        topics.removeFirst(sent)
        guard held.isEmpty else { return nil }
        defer { superseded = 0 }
        return superseded
    }

    /// A new connection starts from the retained snapshot, which has the newest of everything.
    mutating func drop() {
        held.removeAll()
        topics.removeAll()
        superseded = 0
    }
}
