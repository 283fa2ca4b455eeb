import FoundationEssentials

/// One request on the control socket: a JSON object on one line (`ControlSocket`).
///
///     {"command":"status"}
///     {"command":"bonds.remove","address":"AA:BB:CC:DD:EE:FF","stateDirectory":"/var/lib/gattway"}
///     {"command":"pair","seconds":120}
public struct ControlRequest: Codable, Sendable, Equatable {
    public enum Command: String, Codable, Sendable, CaseIterable {
        case status
        case bondsList = "bonds.list"
        case bondsRemove = "bonds.remove"
        case bondsClear = "bonds.clear"
        case reload
        /// Opens the pairing window (`seconds`, else `bluetooth.security.pairing_window`).
        case pair
        /// Closes the pairing window now.
        case pairClose = "pair.close"
    }

    public var command: Command
    /// `bonds.remove`: the central's address, `AA:BB:CC:DD:EE:FF`.
    public var address: String?
    /// `pair`: how long the window stays open, in seconds.
    public var seconds: Int?
    /// The `state_dir` of the configuration the caller read, when it read one: a service serving
    /// another one refuses, so two gattways sharing a `runtime_dir` cannot be mistaken for each
    /// other.
    public var stateDirectory: String?

    public init(_ command: Command, address: String? = nil, seconds: Int? = nil, stateDirectory: String? = nil) {
        self.command = command
        self.address = address
        self.seconds = seconds
        self.stateDirectory = stateDirectory
    }
}

/// The answer to one request, one JSON object on one line: `error` when it failed, otherwise the
/// fields of its command.
public struct ControlResponse: Codable, Sendable, Equatable {
    public var error: String?
    public var status: GatewayStatus?
    /// `bonds.list`: each bond as `gattway bonds list` prints it (never keys).
    public var bonds: [String]?
    /// `bonds.remove` and `bonds.clear`: how many bonds were forgotten.
    public var removed: Int?
    /// `reload`: what the reload did.
    public var reload: ReloadReport?
    /// `pair`, `pair.close`: the pairing window afterwards.
    public var pairing: PairingState?

    public init(
        error: String? = nil, status: GatewayStatus? = nil, bonds: [String]? = nil, removed: Int? = nil,
        reload: ReloadReport? = nil, pairing: PairingState? = nil
    ) {
        self.pairing = pairing
        self.error = error
        self.status = status
        self.bonds = bonds
        self.removed = removed
        self.reload = reload
    }

    public static func failure(_ message: String) -> ControlResponse { ControlResponse(error: message) }
}

/// Whether new centrals may pair now.
public struct PairingState: Codable, Sendable, Equatable {
    /// `window` or `open` (`bluetooth.security.pairing`).
    public var policy: String
    public var open: Bool
    /// Seconds until the window closes; nil when closed, or open at all times.
    public var remaining: Int?
    /// Pairing Requests refused outside a window since the start.
    public var refused: Int

    public init(policy: String, open: Bool, remaining: Int?, refused: Int) {
        self.policy = policy
        self.open = open
        self.remaining = remaining
        self.refused = refused
    }

    /// `pairing window open for 118s more`, as `gattway pair` and `gattway status` print it.
    public var text: String {
        if policy == "open" { return "pairing open at all times (bluetooth.security.pairing: open)" }
        let refusals = refused > 0 ? "; \(refused) pairings refused since the start" : ""
        guard open else { return "pairing window closed (gattway pair opens it)" + refusals }
        return "pairing window open" + (remaining.map { " for \($0)s more" } ?? "") + refusals
    }
}

/// What `gattway status` shows: the controller, the connected centrals, the sensors' current
/// values, the notify counters and the MQTT mirror.
public struct GatewayStatus: Codable, Sendable, Equatable {
    public struct Central: Codable, Sendable, Equatable {
        public var address: String
        public var mtu: Int
        /// `none`, `encrypted` or `authenticated`.
        public var security: String
        /// The link runs on a bond's key.
        public var bonded: Bool
        /// `<service>/<characteristic> notify|indicate`, in database order.
        public var subscriptions: [String]
    }

    public struct Value: Codable, Sendable, Equatable {
        /// `<service>/<characteristic>`.
        public var characteristic: String
        /// The value as MQTT shows it (`ValueJSON.literal`); nil before the first reading.
        public var value: String?
    }

    public struct Sensor: Codable, Sendable, Equatable {
        public var id: String
        public var values: [Value]
        /// Why its readings are not current (no good reading for its deadline); nil while they are.
        public var unavailable: String?
    }

    /// The MQTT mirror, when the configuration has an `mqtt` section.
    public struct MQTT: Codable, Sendable, Equatable {
        /// `mqtt.url` (or `--mqtt`) without credentials, e.g. `mqtt://broker.lan:1883`.
        public var broker: String
        /// `connected`, `connecting` (not yet, or again after a loss: `error` says why), or `off`
        /// (a reload could start neither its new settings nor those before; the next reload tries).
        public var state: String
        /// While not connected, why the last attempt failed or the connection ended; while off,
        /// why the mirror could not start.
        public var error: String?
        /// Connected, but the broker has not taken the last 1,000 messages yet.
        public var behind: Bool
        /// Of each state topic, the newest message held back while the broker is behind.
        public var held: Int
        /// Durable events (writes, subscriptions, centrals) waiting for the broker's acknowledgement.
        public var outbox: Int
        /// Durable events dropped, oldest first, because the outbox was full, since the mirror started.
        public var dropped: Int

        /// One line: `mqtt mqtt://broker.lan:1883: connected; outbox 0 waiting`.
        public var text: String {
            var line = "mqtt \(broker): \(state)"
            if let error { line += " (\(error))" }
            if behind { line += ", behind: \(held) messages held back (the newest of each topic)" }
            if state != "off" { line += "; outbox \(outbox) waiting" + (dropped > 0 ? ", \(dropped) dropped (full)" : "") }
            return line
        }
    }

    /// `bluetooth.transport` (or `--hci`), e.g. `hci0`.
    public var controller: String
    /// `poweredOn`, `poweredOff`, `resetting`, `unsupported`, `unauthorized` or `unknown`.
    public var state: String
    public var advertising: Bool
    public var centrals: [Central]
    public var sensors: [Sensor]
    /// The value pipeline's counters, as on MQTT's `state` topic.
    public var counters: [String: Int]
    /// nil without an `mqtt` section.
    public var mqtt: MQTT?
    /// nil from a gattway that predates pairing windows.
    public var pairing: PairingState?

    /// The status as `gattway status` prints it: one line per fact.
    public var text: String {
        var lines = ["controller \(controller): \(state)\(advertising ? ", advertising" : "")"]
        lines.append(centrals.isEmpty ? "no centrals connected" : "\(centrals.count) connected:")
        for central in centrals {
            let bonded = central.bonded ? ", bonded" : ""
            let subscriptions =
                central.subscriptions.isEmpty ? "no subscriptions" : central.subscriptions.joined(separator: ", ")
            lines.append("  \(central.address) MTU \(central.mtu), security \(central.security)\(bonded); \(subscriptions)")
        }
        if !sensors.isEmpty { lines.append("sensors:") }
        for sensor in sensors {
            let values = sensor.values.map { "\($0.characteristic) = \($0.value ?? "no value yet")" }
            let shown = values.isEmpty ? "on no characteristic" : values.joined(separator: ", ")
            if let why = sensor.unavailable {
                lines.append("  \(sensor.id): unavailable: \(why); last values, not current: \(shown)")
            } else {
                lines.append("  \(sensor.id): " + shown)
            }
        }
        let totals = ["sent", "coalesced", "suppressed", "dropped", "waiting", "lost_events"]
        lines.append("counters: " + totals.map { "\($0) \(counters[$0] ?? 0)" }.joined(separator: ", "))
        if let pairing { lines.append(pairing.text) }
        lines.append(mqtt?.text ?? "mqtt off")
        return lines.joined(separator: "\n")
    }
}

/// What a reload (`gattway reload`, SIGHUP) did with the configuration file.
public struct ReloadReport: Codable, Sendable, Equatable {
    /// When the file was rejected, `gattway check`'s report of it, line by line (the file and
    /// the number of errors, then each error with its YAML path and line): the running
    /// configuration stays as it was. Empty when the file was valid.
    public var errors: [String]
    /// What changed and runs now, one line each (`sensor door restarted`).
    public var applied: [String]
    /// What changed but could not be applied (a sensor whose line is missing or busy): a changed
    /// sensor runs as before, a new one does not run; the next reload tries again.
    public var failed: [String]
    /// What changed but runs as before until gattway restarts, one line each.
    public var needsRestart: [String]

    public init(errors: [String] = [], applied: [String] = [], failed: [String] = [], needsRestart: [String] = []) {
        self.errors = errors
        self.applied = applied
        self.failed = failed
        self.needsRestart = needsRestart
    }

    public var rejected: Bool { !errors.isEmpty }

    /// The report as `gattway reload` prints it and the service logs it.
    public var lines: [String] {
        if rejected {
            return ["configuration rejected, the running one stays:"] + errors
        }
        if applied.isEmpty && failed.isEmpty && needsRestart.isEmpty { return ["configuration unchanged"] }
        return ["configuration reloaded"] + applied.map { "  applied: \($0)" } + failed.map { "  failed: \($0)" }
            + needsRestart.map { "  not applied: \($0)" }
    }
}

/// The control socket's framing: one JSON object per line, no newline inside (JSON escapes those
/// in strings), keys sorted so the same answer reads the same.
public enum ControlLine {
    public static func encode(_ message: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain structs cannot fail.
        return Array((try? encoder.encode(message)) ?? Data("{}".utf8)) + [UInt8(ascii: "\n")]
    }

    /// One line without its newline.
    public static func decode<Message: Decodable>(_ type: Message.Type, from line: some Collection<UInt8>) throws -> Message {
        try JSONDecoder().decode(type, from: Data(line))
    }
}
