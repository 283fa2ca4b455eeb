import BluetoothCore
import BluetoothHost
import Config
import EventLoop
import Logging
import Sensors
import Values

/// The readings of sensors configured with `bthome: true`, as BTHome v2 service data (UUID 0xFCD2)
/// in the advertising data, so Home Assistant and other BTHome receivers read them without
/// connecting. Pure: `record` keeps each reading's newest value, `settings(base:)` lays out what
/// to advertise within the legacy 31-byte budget.
///
/// Which BTHome object a reading becomes: DHT temperature (0x02, 0.01 °C) and humidity (0x03,
/// 0.01 %), binary sensors as generic boolean (0x0F), counters as count (0x3E, uint32), distance
/// (0x40, mm). Other kinds have no BTHome object and are reported by `unsupported`.
public struct BTHomeBroadcast: Sendable {
    struct Route: Hashable, Sendable {
        let sensor: String
        let channel: String
    }

    /// The broadcast readings in configuration order, each with its object.
    let routes: [(route: Route, object: BTHomeObject)]
    /// Sensors with `bthome: true` whose kind has no BTHome object, with why.
    public let unsupported: [String]
    private var latest: [Route: BTHomeMeasurement] = [:]

    /// Nil when no sensor is broadcast.
    public init?(config: GatewayConfig) {
        var routes: [(Route, BTHomeObject)] = []
        var unsupported: [String] = []
        for sensor in config.sensors where sensor.bthome {
            let objects = Self.objects(for: sensor.kind)
            if objects.isEmpty {
                unsupported.append("sensor \(sensor.id): a \(sensor.kind.name) sensor has no BTHome object; not broadcast")
            }
            routes += objects.map { (Route(sensor: sensor.id, channel: $0.reading.rawValue), $0.object) }
        }
        guard !routes.isEmpty || !unsupported.isEmpty else { return nil }
        self.routes = routes
        self.unsupported = unsupported
    }

    static func objects(for kind: SensorKindConfig) -> [(reading: SensorReading, object: BTHomeObject)] {
        switch kind {
        case .dht: [(.temperature, .temperature), (.humidity, .humidity)]
        case .binary: [(.value, .genericBoolean)]
        case .counter: [(.value, .count32)]
        case .distance: [(.value, .distance)]
        case .rate, .pulseWidth, .rotaryEncoder, .output: []
        }
    }

    /// Keeps `value` if it is a broadcast reading; true when what is advertised changes.
    public mutating func record(_ value: Sensors.SensorValue) -> Bool {
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

    /// `base` with the BTHome service data of the newest values added. Readings that fit nowhere in
    /// the 31 bytes of advertising and scan response data are left out from the last configured one
    /// backwards, and named in `leftOut`; a value its object cannot encode (out of range) is named
    /// too. `base` fields are placed first, as the host places them.
    public func settings(base: AdvertisingSettings) -> (settings: AdvertisingSettings, leftOut: [String]) {
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
            guard let data = try? BTHome.serviceData(included.map(\.1)) else { break }
            var candidate = base
            candidate.serviceData.append((uuid: BTHome.serviceUUID, data: data))
            // The TX power field's size, not its value, matters here.
            let payload = AdvertisingPayload(settings: candidate, txPower: 0)
            if !payload.notFitted.contains(where: { $0.hasPrefix("service data for \(BTHome.serviceUUID)") }) {
                return (candidate, leftOut)
            }
            let (route, dropped) = included.removeLast()
            leftOut.insert("BTHome \(dropped.object.rawValue) of \(route.sensor) does not fit in 31 bytes", at: 0)
        }
        return (base, leftOut)
    }
}

/// Keeps the advertised BTHome data current: after a broadcast reading changes, the host's
/// advertising data is updated — at most once per `minimumInterval` (1 s), since every update is two
/// HCI commands and BTHome receivers do not need more; the newest values go out when the interval
/// ends, never a value older than the newest.
public actor BTHomeAdvertiser {
    /// On the event loop, with the other actors of the event path: calls between them run inline.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    public static let minimumInterval = Duration.seconds(1)

    private var broadcast: BTHomeBroadcast
    private let base: AdvertisingSettings
    private let logger: Logger
    private let publish: @Sendable (AdvertisingSettings) async throws -> Void
    private var lastPublished: ContinuousClock.Instant?
    private var pending: Task<Void, Never>?
    private var leftOut: [String] = []

    /// `publish`: the host's `updateAdvertisingData`.
    public init(
        broadcast: BTHomeBroadcast, base: AdvertisingSettings, logger: Logger,
        publish: @escaping @Sendable (AdvertisingSettings) async throws -> Void
    ) {
        self.broadcast = broadcast
        self.base = base
        self.logger = logger
        self.publish = publish
        for problem in broadcast.unsupported { logger.warning("\(problem)") }
    }

    /// A sensor reading; the advertising data follows when it is a broadcast one that changed.
    /// Synchronous, on the event loop where the reading was made: the update itself (at most one a
    /// `minimumInterval`) runs as a task.
    public func reading(_ value: Sensors.SensorValue) {
        guard broadcast.record(value), pending == nil else { return }
        let due = lastPublished.map { $0 + Self.minimumInterval } ?? .now
        pending = Task {
            if due > .now { try? await Task.sleep(until: due, clock: .continuous) }
            await self.refresh()
        }
    }

    private func refresh() async {
        pending = nil
        lastPublished = .now
        let (settings, leftOut) = broadcast.settings(base: base)
        if leftOut != self.leftOut {
            self.leftOut = leftOut
            for field in leftOut { logger.warning("advertising: \(field)") }
        }
        do {
            try await publish(settings)
        } catch {
            logger.debug("BTHome advertising data not updated", metadata: ["reason": "\(error)"])
        }
    }

    public func finish() {
        pending?.cancel()
        pending = nil
    }
}
