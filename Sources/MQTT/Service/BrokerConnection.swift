import Logging
import MQTTClient
import MQTTMirror

/// The service's side of the broker connection: the client (which connects, and reconnects after
/// its back-off), the live connection, why there is none, and each change reported once. Sends go
/// to the live connection only; one that just died is reported by the client's own events.
///
/// A class, owned by the service alone: every value asks it whether the broker is behind and
/// sends through it, and a struct in the actor's property would be copied for each of those
/// calls (its logger, client and handler retained and released).
final class BrokerConnection {
    /// nil when the connection could not start (`MQTTMirrorService.startFailure`).
    let client: MQTTClient?
    private let logger: Logger
    private let onChange: MQTTMirrorService.ConnectionHandler
    private(set) var live: MQTTConnectionID?
    /// Why the mirror is not connected: the last attempt's failure, or how the last connection
    /// ended; nil while connected.
    private(set) var lastError: String?
    /// `stop()` was called: the connection's end is no news for `onChange`.
    private(set) var isStopping = false

    init(client: MQTTClient?, logger: Logger, onChange: @escaping MQTTMirrorService.ConnectionHandler) {
        self.client = client
        self.logger = logger
        self.onChange = onChange
    }

    func connected(_ id: MQTTConnectionID) {
        live = id
        lastError = nil
        onChange(nil)
        logger.info("MQTT connected to \(brokerAddress) (\(id))")
    }

    /// Whether `id` was the live connection (the end of an older one is no news).
    func disconnected(_ id: MQTTConnectionID, reason: String) -> Bool {
        guard live == id else { return false }
        live = nil
        lastError = reason
        if !isStopping { onChange("\(reason); reconnecting") }
        return true
    }

    func failed(_ error: MQTTError) {
        lastError = "\(error)"
        onChange("\(error); retrying")
    }

    func stopping() { isStopping = true }

    /// Connected, but the broker has not yet taken `MQTTClientConfiguration.maximumBacklog`
    /// messages.
    var isBehind: Bool {
        guard let live, let client else { return false }
        return client.isBehind(on: live)
    }

    var brokerAddress: String {
        guard let client else { return "(no connection)" }
        return "\(client.configuration.host):\(client.configuration.port)"
    }

    /// Sends `message` on the live connection; nothing without one.
    func publish(_ message: MQTTMessage) {
        guard let live, let client else { return }
        report { try client.publish(message, on: live) }
    }

    /// Sends `message` for the broker to acknowledge; its message id, nil when it was not sent.
    func publishReportingDelivery(_ message: MQTTMessage) -> Int32? {
        guard let live, let client else { return nil }
        var messageID: Int32?
        report { messageID = try client.publish(message, on: live, reportsDelivery: true) }
        return messageID
    }

    func subscribe(_ topic: String) {
        guard let live, let client else { return }
        report { try client.subscribe(topic, on: live) }
    }

    func unsubscribe(_ topic: String) {
        guard let live, let client else { return }
        report { try client.unsubscribe(topic, on: live) }
    }

    /// A connection that just died is reported by the client's own events; other failures are logged.
    private func report(_ body: () throws -> Void) {
        do { try body() } catch MQTTError.notConnected {
        } catch { logger.error("\(error)") }
    }
}
