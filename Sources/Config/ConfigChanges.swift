/// What differs between the running configuration and a reloaded one (`gattway reload`, SIGHUP),
/// grouped by how the running service takes it: sensors are restarted one by one, everything else
/// is named by its section so the reload can say what it applied and what waits for a restart.
public struct ConfigChanges: Sendable, Equatable {
    /// Sensors only in the new configuration, in its order.
    public var sensorsAdded: [String] = []
    /// Sensors only in the old configuration, in its order.
    public var sensorsRemoved: [String] = []
    /// Sensors in both whose settings differ (kind, lines, filters; `bthome` is the broadcast's,
    /// `sensors[].bthome` in `sections`), in the new order.
    public var sensorsChanged: [String] = []
    /// Characteristics (`<service>/<characteristic>`, names or UUIDs, in database order) whose
    /// `notify` policy alone differs, when the services are otherwise the same.
    public var notifyPolicies: [String] = []
    /// The top-level sections that differ and that a sensor restart or a notify policy does not
    /// cover, in file order: `device`, `bluetooth`, `state_dir`, `runtime_dir`, `gpio`,
    /// `sensors[].bthome` (which sensors the BTHome broadcast carries), `services` (a service or
    /// characteristic added, removed or changed beyond its policy), `mqtt`.
    public var sections: [String] = []

    public init(
        sensorsAdded: [String] = [], sensorsRemoved: [String] = [], sensorsChanged: [String] = [],
        notifyPolicies: [String] = [], sections: [String] = []
    ) {
        self.sensorsAdded = sensorsAdded
        self.sensorsRemoved = sensorsRemoved
        self.sensorsChanged = sensorsChanged
        self.notifyPolicies = notifyPolicies
        self.sections = sections
    }

    public var isEmpty: Bool {
        sensorsAdded.isEmpty && sensorsRemoved.isEmpty && sensorsChanged.isEmpty && notifyPolicies.isEmpty
            && sections.isEmpty
    }

    public static func between(_ old: GatewayConfig, _ new: GatewayConfig) -> ConfigChanges {
        var changes = ConfigChanges()
        let oldSensors = Dictionary(old.sensors.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let newIDs = Set(new.sensors.map(\.id))
        for sensor in new.sensors {
            if let before = oldSensors[sensor.id] {
                if Self.withoutBroadcast(before) != Self.withoutBroadcast(sensor) {
                    changes.sensorsChanged.append(sensor.id)
                }
            } else {
                changes.sensorsAdded.append(sensor.id)
            }
        }
        changes.sensorsRemoved = old.sensors.map(\.id).filter { !newIDs.contains($0) }
        let policiesOnly = Self.withoutPolicies(old.services) == Self.withoutPolicies(new.services)
        if policiesOnly {
            for (before, after) in zip(old.services, new.services) {
                for (was, now) in zip(before.characteristics, after.characteristics) where was.notify != now.notify {
                    changes.notifyPolicies.append("\(after.name ?? after.uuid.description)/\(now.name ?? now.uuid.description)")
                }
            }
        }
        let sections: [(String, Bool)] = [
            ("device", old.device != new.device),
            ("bluetooth", old.bluetooth != new.bluetooth),
            ("state_dir", old.stateDirectory != new.stateDirectory),
            ("runtime_dir", old.runtimeDirectory != new.runtimeDirectory),
            ("gpio", old.gpio != new.gpio),
            // The BTHome broadcast's objects are fixed when it starts.
            ("sensors[].bthome", Self.broadcast(old) != Self.broadcast(new)),
            ("services", !policiesOnly),
            ("mqtt", old.mqtt != new.mqtt)
        ]
        changes.sections = sections.filter(\.1).map(\.0)
        return changes
    }

    /// `sensor` as its runner sees it: `bthome` concerns the broadcast only.
    private static func withoutBroadcast(_ sensor: SensorConfig) -> SensorConfig {
        var sensor = sensor
        sensor.bthome = false
        return sensor
    }

    /// The sensors with `bthome: true`, each as `id:kind:readings` (a button's presses are an
    /// object of their own).
    private static func broadcast(_ config: GatewayConfig) -> [String] {
        config.sensors.filter(\.bthome).map {
            "\($0.id):\($0.kind.name):\($0.kind.readings.map(\.rawValue).joined(separator: ","))"
        }
    }

    /// The services with every characteristic's notify policy set to the same one.
    private static func withoutPolicies(_ services: [ServiceConfig]) -> [ServiceConfig] {
        services.map { service in
            var service = service
            for index in service.characteristics.indices {
                service.characteristics[index].notify = .immediate
            }
            return service
        }
    }
}
