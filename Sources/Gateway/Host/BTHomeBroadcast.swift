import BluetoothCore
import BluetoothHost
import Config
import EventLoop
import Logging
import LoopClock
import Sensors
import StateFile
import Values

/// The readings of sensors configured with `bthome: true`, as BTHome v2 service data (UUID 0xFCD2)
/// in the advertising data itself (never the scan response: Home Assistant scans passively), so
/// Home Assistant and other BTHome receivers read them without connecting. Pure: `record` keeps
/// each reading's newest value, `settings(base:packetID:encryption:)` lays out a packet within
/// the advertising data's 31 bytes.
///
/// Which BTHome object a reading becomes: DHT temperature (0x02, 0.01 °C) and humidity (0x03,
/// 0.01 %), binary sensors as generic boolean (0x0F) and, with `press`, their presses as button
/// events (0x3A), counters as count (0x3E, uint32), distance (0x40, mm). Other kinds have no
/// BTHome object and are reported by `unsupported`.
///
/// A button object is in every packet, in configuration order (receivers number the buttons of a
/// device by their order in the packet): a press goes out in the next packet (a new packet id, so
/// receivers take it once) and the packets after it carry "no event" (0x00) until the next press.
public struct BTHomeBroadcast: Sendable {
    struct Route: Hashable, Sendable {
        let sensor: String
        let channel: String
    }

    /// The broadcast readings in configuration order, each with its object.
    let routes: [(route: Route, object: BTHomeObject)]
    /// Sensors with `bthome: true` whose kind has no BTHome object, with why.
    public let unsupported: [String]
    /// The bind key (`bluetooth.bthome.key_file`) when the broadcasts are encrypted.
    public let key: BTHomeKey?
    private var latest: [Route: BTHomeMeasurement] = [:]

    /// Nil when no sensor is broadcast.
    public init?(config: GatewayConfig) {
        var routes: [(Route, BTHomeObject)] = []
        var unsupported: [String] = []
        for sensor in config.sensors where sensor.bthome {
            let objects = sensor.kind.bthomeObjects
            if objects.isEmpty {
                unsupported.append("sensor \(sensor.id): a \(sensor.kind.name) sensor has no BTHome object; not broadcast")
            }
            routes += objects.map { (Route(sensor: sensor.id, channel: $0.reading.rawValue), $0.object) }
        }
        guard !routes.isEmpty || !unsupported.isEmpty else { return nil }
        self.routes = routes
        self.unsupported = unsupported
        key = config.bluetooth.bthome.key
        for (route, object) in routes where object == .button {
            latest[Route(sensor: route.sensor, channel: route.channel)] = BTHomeMeasurement(button: .none)
        }
    }

    /// Keeps `value` if it is a broadcast reading; true when what is advertised changes.
    public mutating func record(_ value: SensorSample) -> Bool {
        let route = Route(sensor: value.sensor, channel: value.channel)
        guard let object = routes.first(where: { $0.route == route })?.object else { return false }
        let adapted: Values.SensorValue
        switch value.reading {
        case .number(let number): adapted = object.isBinary ? .bool(number != 0) : .number(number)
        case .bool(let flag): adapted = object.isBinary ? .bool(flag) : .number(flag ? 1 : 0)
        case .failure: return false  // the last good value stays advertised
        }
        let measurement = BTHomeMeasurement(object, adapted)
        guard latest[route] != measurement else { return false }
        latest[route] = measurement
        return true
    }

    /// The button events a packet carried (`eventsSent`), to put back should it not go out.
    public struct SentEvents: Sendable {
        fileprivate let events: [(Route, BTHomeMeasurement)]

        /// Whether the packet carried a press.
        public var isEmpty: Bool { events.isEmpty }
    }

    /// After a packet went out: its button events are not sent again, the next packets say "no
    /// event" until the next press. Returns the presses it carried.
    @discardableResult
    public mutating func eventsSent() -> SentEvents {
        let none = BTHomeMeasurement(button: .none)
        var sent: [(Route, BTHomeMeasurement)] = []
        for (route, object) in routes where object == .button {
            if let event = latest[route], event != none { sent.append((route, event)) }
            latest[route] = none
        }
        return SentEvents(events: sent)
    }

    /// The packet carrying `sent` did not go out (the advertising data could not be updated):
    /// its presses go in the next packet, unless a newer press of the same button took their place.
    public mutating func eventsNotSent(_ sent: SentEvents) {
        for (route, event) in sent.events where latest[route] == BTHomeMeasurement(button: .none) {
            latest[route] = event
        }
    }

    /// `base` with the BTHome packet of the newest values as its passive service data: packet id
    /// `packetID`, encrypted when `encryption` is given (with this broadcast's key). Readings that
    /// do not fit in the advertising data beside the flags are left out from the last configured
    /// one backwards, and named in `leftOut`; a value its object cannot encode (out of range) is
    /// named too.
    public func settings(
        base: AdvertisingSettings, packetID: UInt8, encryption: BTHomeEncryption?
    ) -> (settings: AdvertisingSettings, leftOut: [String]) {
        var leftOut: [String] = []
        var included: [(Route, BTHomeMeasurement)] = []
        for (route, object) in routes {
            guard let measurement = latest[route] else { continue }
            do {
                _ = try measurement.bytes()
                included.append((route, measurement))
            } catch {
                leftOut.append("BTHome \(object.rawValue) of \(route.sensor) (\(error))")
            }
        }
        while !included.isEmpty {
            guard
                let data = try? BTHome.serviceData(
                    included.map(\.1), packetID: packetID, encryption: encryption)
            else { break }
            var candidate = base
            candidate.passiveServiceData = (uuid: BTHome.serviceUUID, data: data)
            // The TX power field's size, not its value, matters here.
            let payload = AdvertisingPayload(settings: candidate, txPower: 0)
            let name = AdvertisingPayload.serviceDataName(BTHome.serviceUUID)
            if !payload.notFitted.contains(where: { $0.hasPrefix(name) }) {
                return (candidate, leftOut)
            }
            let (route, dropped) = included.removeLast()
            leftOut.insert(
                "BTHome \(dropped.object.rawValue) of \(route.sensor) does not fit in the advertising data", at: 0)
        }
        return (base, leftOut)
    }
}

/// Keeps the advertised BTHome data current: after a broadcast reading changes, the host's
/// advertising data is updated with a new packet (the next packet id and, encrypted, the next
/// counter) — at most once per `minimumInterval` (1 s), since every update is two HCI commands and
/// BTHome receivers do not need more; the newest values go out when the interval ends, never a
/// value older than the newest.
public actor BTHomeAdvertiser {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public static let minimumInterval = Duration.seconds(1)

    private var broadcast: BTHomeBroadcast
    private let base: AdvertisingSettings
    private let logger: Logger
    private let address: @Sendable () async -> BluetoothAddress?
    private let publish: @Sendable (AdvertisingSettings) async throws -> Void
    /// With a bind key: the encryption counter, persisted ahead (`BTHomeCounter`).
    private var counter: BTHomeCounter?
    private let stateWriter: StateFileWriter
    /// Object 0x00 of the next packet: receivers drop a packet whose id they have just seen.
    private var packetID: UInt8 = 0
    private var lastPublished: LoopInstant?
    private var pending: Task<Void, Never>?
    private var leftOut: [String] = []
    private var unsentReason: String?

    /// `counter`: loaded when the broadcast has a key; `stateWriter` writes its reservations.
    /// `address`: the address the controller advertises with (part of the encryption nonce), nil
    /// until it is up. `publish`: the host's `updateAdvertisingData`.
    public init(
        broadcast: BTHomeBroadcast, base: AdvertisingSettings, counter: BTHomeCounter?, stateWriter: StateFileWriter,
        logger: Logger,
        address: @escaping @Sendable () async -> BluetoothAddress?,
        publish: @escaping @Sendable (AdvertisingSettings) async throws -> Void
    ) {
        self.broadcast = broadcast
        self.base = base
        self.counter = counter
        self.stateWriter = stateWriter
        self.logger = logger
        self.address = address
        self.publish = publish
        for problem in broadcast.unsupported { logger.warning("\(problem)") }
    }

    /// A sensor reading; the advertising data follows when it is a broadcast one that changed.
    /// Synchronous, on the event loop where the reading was made: the update itself (at most one a
    /// `minimumInterval`) runs as a task.
    public func reading(_ value: SensorSample) {
        guard broadcast.record(value) else { return }
        scheduleRefresh()
    }

    private func scheduleRefresh() {
        guard pending == nil else { return }
        let wait = lastPublished.map { $0 + Self.minimumInterval - EventLoop.now() } ?? .zero
        pending = Task {
            if wait > .zero { try? await Task.sleep(for: wait) }
            await self.refresh()
        }
    }

    private func refresh() async {
        // The address is asked for while this refresh is still pending: a reading recorded during
        // that wait goes out in this packet rather than scheduling another with nothing new in it.
        let address = broadcast.key == nil ? nil : await address()
        pending = nil
        lastPublished = EventLoop.now()
        var encryption: BTHomeEncryption?
        if let key = broadcast.key {
            // Until the controller is up (a moment at start): the address is part of the nonce.
            guard let address else { return scheduleRefresh() }
            guard let number = counter?.take() else {
                reserveAhead()
                return notSent("no encryption counter is reserved (writing \(counter?.path ?? BTHomeCounter.fileName))")
            }
            encryption = BTHomeEncryption(key: key, address: address, counter: number)
            reserveAhead()
        }
        unsentReason = nil
        let (settings, leftOut) = broadcast.settings(base: base, packetID: packetID, encryption: encryption)
        let presses = broadcast.eventsSent()
        packetID &+= 1
        if leftOut != self.leftOut {
            self.leftOut = leftOut
            for field in leftOut { logger.warning("advertising: \(field)") }
        }
        do {
            try await publish(settings)
        } catch {
            guard !presses.isEmpty else {
                logger.debug("BTHome advertising data not updated", metadata: ["reason": "\(error)"])
                return
            }
            // A press is an event: lost here, nothing would ever send it. The next packet carries it.
            logger.warning("BTHome: a press was not broadcast (\(error)); trying again in \(Self.minimumInterval)")
            broadcast.eventsNotSent(presses)
            scheduleRefresh()
        }
    }

    /// This refresh sends nothing; the next one tries again in a `minimumInterval`.
    private func notSent(_ reason: String) {
        if reason != unsentReason {
            unsentReason = reason
            logger.warning("BTHome: not broadcast: \(reason)")
        }
        scheduleRefresh()
    }

    /// Persists the next counter limit on the state files' writer thread (an fsync may take a
    /// while on flash) when half of the reserved counters are used.
    private func reserveAhead() {
        guard let limit = counter?.reservationDue(), let path = counter?.path else { return }
        stateWriter.write(BTHomeCounter.contents(limit), to: path) { [self] error in
            EventLoop.shared.execute { self.onLoop { $0.reserved(limit, failure: error) } }
        }
    }

    private func reserved(_ limit: UInt32, failure: StateFileError?) {
        counter?.reserved(limit, written: failure == nil)
        if let failure { logger.error("BTHome: encryption counter not reserved ahead: \(failure)") }
    }

    public func finish() {
        pending?.cancel()
        pending = nil
    }
}
