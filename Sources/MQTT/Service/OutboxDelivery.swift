import MQTTMirror

/// The outbox's side of a connection: which entry each message id of the live connection
/// carries, so the broker's acknowledgement (PUBACK) takes exactly that entry off the outbox. A
/// connection's message ids die with it: the next one sends every pending entry again.
struct OutboxDelivery {
    let outbox: MQTTOutbox
    /// Message id of the live connection → the outbox entry awaiting its acknowledgement.
    private var inFlight: [Int32: OutboxEntry] = [:]
    /// Entries the broker refused (MQTT 5 reason code ≥ 0x80) since this service started.
    private(set) var refused = 0

    init(outbox: MQTTOutbox) {
        self.outbox = outbox
    }

    /// `entry` went out as message `messageID` of the live connection.
    mutating func sent(_ entry: OutboxEntry, as messageID: Int32) {
        inFlight[messageID] = entry
    }

    /// The broker acknowledged message `messageID`: its entry leaves the outbox, refused or not (a
    /// refused event would be refused again, and hold up the outbox). Returns the entry when the
    /// broker refused it, for the caller to report; nil otherwise, and for a message id the live
    /// connection did not send for the outbox.
    mutating func delivered(_ messageID: Int32, reasonCode: Int32) throws -> OutboxEntry? {
        guard let entry = inFlight.removeValue(forKey: messageID) else { return nil }
        let refusedEntry: OutboxEntry? = reasonCode >= 0x80 ? entry : nil
        if refusedEntry != nil { refused += 1 }
        try outbox.acknowledge(entry.sequence)
        return refusedEntry
    }

    /// The connection came or went: nothing it sent is awaited any more.
    mutating func connectionChanged() {
        inFlight = [:]
    }

    /// Entries sent on the live connection and not yet acknowledged.
    var awaiting: Int { inFlight.count }
}
