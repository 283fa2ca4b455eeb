import BluetoothCore
import BluetoothHCI
import ConfigReading
import FoundationEssentials
import Glibc
import MQTTMirror
import Sensors
import Values

/// Turns a YAML document into a `GatewayConfig`. It never stops at the first problem: each part
/// records its errors in the `LoadContext` and carries on with defaults, so one run reports
/// everything; the loader throws if any error was recorded, discarding the partial model.
struct ConfigParser {
    let context: LoadContext
    /// The file `device.name_add_suffix` reads (tests give their own).
    var machineIDFile = ConfigDefaults.machineIDFile
    typealias D = ConfigDefaults

    func parse(_ document: ConfigNode?) -> GatewayConfig {
        let top = document.flatMap { $0.isNull ? nil : $0.mapping("") }
        let device = parseDevice(top?["device"]?.mapping("device"))
        let bluetooth = parseBluetooth(top?["bluetooth"]?.mapping("bluetooth"), device: device)
        let stateDirectory = top?["state_dir"]?.nonEmptyString() ?? D.stateDirectory
        let runtimeDirectory = top?["runtime_dir"]?.nonEmptyString() ?? D.runtimeDirectory
        let gpio = parseGPIO(top?["gpio"]?.mapping("gpio"))
        let mqtt = top?["mqtt"]?.mapping(
            "mqtt",
            forbidden: [
                "password": "the password is never written in the configuration; use password_file or password_env"
            ]
        ).map { parseMQTT($0, device: device) }

        let sensorNodes = top?["sensors"]?.list() ?? []
        var claims = LineClaims()
        var sensors: [SensorConfig] = []
        var firstLineOfID: [String: Int] = [:]
        for node in sensorNodes {
            guard let sensor = parseSensor(node, gpio: gpio, claims: &claims) else { continue }
            if let first = firstLineOfID[sensor.id] {
                context.error(node.path.key("id"), line: nil, "duplicate sensor id \"\(sensor.id)\" (first at line \(first))")
            } else {
                firstLineOfID[sensor.id] = context.line(of: node.path.key("id")) ?? 0
                sensors.append(sensor)
            }
        }

        let serviceNodes = top?["services"]?.list() ?? []
        let references = References(
            sensors: Dictionary(sensors.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first }),
            declaredSensorIDs: declaredNames(in: sensorNodes, key: "id"),
            serviceNames: declaredNames(in: serviceNodes, key: "name"),
            mqttConfigured: mqtt != nil)
        var services: [ServiceConfig] = []
        var firstLineOfName: [String: Int] = [:]
        for node in serviceNodes {
            guard let service = parseService(node, references: references) else { continue }
            if let name = service.name {
                if let first = firstLineOfName[name] {
                    context.error(node.path.key("name"), line: nil, "duplicate service name \"\(name)\" (first at line \(first))")
                }
                firstLineOfName[name] = firstLineOfName[name] ?? context.line(of: node.path.key("name")) ?? 0
            }
            services.append(service)
        }

        warnAboutUndrivenOutputs(sensors, services: services, sensorNodes: sensorNodes)
        warnAboutExposure(bluetooth.security, sensors: sensors, services: services, mqtt: mqtt)
        checkButton(bluetooth.security.confirmWith, key: "confirm_with", doing: "confirming", references: references)
        checkButton(bluetooth.security.pairWith, key: "pair_with", doing: "opening the pairing window", references: references)
        if bluetooth.bthome.key != nil, !sensors.contains(where: \.bthome) {
            context.warning(
                ConfigPath.root.key("bluetooth").key("bthome").key("key_file"), line: nil,
                "no sensor has bthome: true, so nothing is broadcast or encrypted")
        }
        return GatewayConfig(
            device: device, bluetooth: bluetooth, stateDirectory: stateDirectory,
            runtimeDirectory: runtimeDirectory, gpio: gpio, sensors: sensors, services: services, mqtt: mqtt)
    }

    /// An output no writable characteristic carries can never change from its initial level.
    private func warnAboutUndrivenOutputs(
        _ sensors: [SensorConfig], services: [ServiceConfig],
        sensorNodes: [ConfigNode]
    ) {
        var driven: Set<String> = []
        for characteristic in services.flatMap(\.characteristics) where characteristic.properties.isWritable {
            if case .sensor(let id, _) = characteristic.source { driven.insert(id) }
        }
        for node in sensorNodes {
            guard let id = node.plainValue(of: "id"),
                let sensor = sensors.first(where: { $0.id == id }), sensor.kind.isOutput,
                !driven.contains(id)
            else { continue }
            context.warning(
                node.path.key("id"), line: nil,
                "output \"\(id)\" is not the source of any writable characteristic, so nothing drives it")
        }
    }

    /// Warnings (not errors: a lab or a trusted network may want this) where a deployment lets
    /// strangers drive outputs: pairing open at all times, so anyone in radio range can bond and
    /// write; `/set` taken from a broker reached without TLS or without credentials, so anyone on
    /// the network can publish (or read the password). A broker on the loopback is left alone.
    private func warnAboutExposure(
        _ security: SecurityConfig, sensors: [SensorConfig], services: [ServiceConfig], mqtt: MQTTConfig?
    ) {
        let outputs = Set(sensors.filter(\.kind.isOutput).map(\.id))
        let writable = services.flatMap(\.characteristics).filter(\.properties.isWritable)
        let drivingOutputs = writable.compactMap { characteristic -> String? in
            guard case .sensor(let id, _) = characteristic.source, outputs.contains(id) else { return nil }
            return id
        }
        if security.pairing == .open, let first = drivingOutputs.first {
            context.warning(
                ConfigPath.root.key("bluetooth").key("security").key("pairing"), line: nil,
                "pairing: open lets anyone in radio range pair and write the outputs (\"\(first)\""
                    + (drivingOutputs.count > 1 ? " and \(drivingOutputs.count - 1) more" : "")
                    + "); the default, window, pairs only while the owner allows it (gattway pair)")
        }
        let acceptsSet = writable.contains { characteristic in
            switch characteristic.source {
            case .mqtt, .fixed: false
            case .sensor, .written: true
            }
        }
        guard let mqtt, acceptsSet, !["localhost", "127.0.0.1", "::1"].contains(mqtt.broker.host) else { return }
        var missing: [String] = []
        if !mqtt.broker.usesTLS { missing.append("TLS (mqtts://)") }
        if mqtt.username == nil { missing.append("credentials (username, password_file)") }
        guard !missing.isEmpty else { return }
        context.warning(
            ConfigPath.root.key("mqtt").key("url"), line: nil,
            "writable characteristics take MQTT /set from \(mqtt.broker) without "
                + missing.joined(separator: " or ") + ": anyone who can publish there can write them")
    }

    /// `bluetooth.security.confirm_with` and `pair_with` name a binary sensor (read after the
    /// sensors are).
    private func checkButton(_ id: String?, key: String, doing: String, references: References) {
        guard let id else { return }
        let path = ConfigPath.root.key("bluetooth").key("security").key(key)
        let report = { (message: String) in context.error(path, line: nil, message) }
        guard let sensor = references.sensor(id, report: report) else { return }
        if sensor.kind.isBinary { return }
        report("sensor \"\(id)\" is a \(sensor.kind.name) sensor; \(doing) needs a binary one (a button)")
    }

    /// What characteristics may refer to.
    struct References {
        let sensors: [String: SensorConfig]
        /// Ids written in the file, including sensors that failed to parse, so a broken sensor
        /// does not also produce "no sensor" errors wherever it is used.
        let declaredSensorIDs: Set<String>
        let serviceNames: Set<String>
        let mqttConfigured: Bool

        /// The sensor `id` names. An unknown id is reported ("no sensor", with a did-you-mean)
        /// unless a sensor declared it and failed to parse (that sensor's error says why).
        func sensor(_ id: String, report: (String) -> Void) -> SensorConfig? {
            if let sensor = sensors[id] { return sensor }
            if !declaredSensorIDs.contains(id) {
                report("no sensor \"\(id)\"" + Suggestion.hint(for: id, among: declaredSensorIDs.sorted()))
            }
            return nil
        }
    }

    /// Which sensor uses each line, to catch two sensors on one line.
    struct LineClaims {
        var owners: [LineReference: String] = [:]
    }

    /// The values of `key` in the list's mappings, as written.
    private func declaredNames(in nodes: [ConfigNode], key: String) -> Set<String> {
        Set(nodes.compactMap { $0.plainValue(of: key) })
    }

    // MARK: device

    func parseDevice(_ m: ConfigMapping?) -> DeviceConfig {
        var name = D.deviceName
        if let node = m?["name"], let text = node.nonEmptyString() {
            // The GAP Device Name characteristic holds at most 248 bytes.
            if text.utf8.count <= 248 { name = text } else { node.report("is \(text.utf8.count) bytes; at most 248") }
        }
        if let node = m?["name_add_suffix"], node.bool() ?? D.nameAddSuffix, let machineID = readMachineID(node) {
            name += D.nameSuffix(machineID: machineID)
        }
        var id = D.deviceID(forName: name)
        if let node = m?["id"], let text = node.nonEmptyString() {
            if text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
                id = text
            } else {
                node.report(
                    "\"\(text)\" may hold only letters, digits, - and _ (it is an MQTT topic level)")
            }
        }
        let appearance = m?["appearance"]?.integer(UInt16.self) ?? D.appearance
        return DeviceConfig(name: name, id: id, appearance: appearance)
    }

    /// The machine id `device.name_add_suffix` derives the suffix from: 32 hex digits in
    /// `machineIDFile`, as systemd writes it.
    private func readMachineID(_ node: ConfigNode) -> String? {
        let files = FileManager.default
        guard let data = files.contents(atPath: machineIDFile) else {
            node.report("\(machineIDFile) cannot be read, and the name's suffix comes from it")
            return nil
        }
        let text = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined()
        guard text.utf8.count == 32, text.allSatisfy(\.isHexDigit) else {
            node.report(
                "\(machineIDFile) holds no machine id (32 hex digits), and the name's suffix comes from it "
                    + "(an image's first boot makes it: systemd-machine-id-setup)")
            return nil
        }
        return text.lowercased()
    }

    // MARK: bluetooth

    func parseBluetooth(_ m: ConfigMapping?, device: DeviceConfig) -> BluetoothConfig {
        var transport = D.transport
        if let node = m?["transport"], let text = node.nonEmptyString() {
            do {
                transport = try HCITransportSpec(parsing: text)
            } catch {
                node.report(error.description)
            }
        }
        let advertising = parseAdvertising(
            m?["advertising"]?.mapping(
                "bluetooth.advertising",
                forbidden: [
                    "extended": "extended advertising is not supported: gattway advertises with legacy PDUs (31 bytes "
                        + "of advertising data and 31 of scan response), which every phone scans for; remove this key"
                ]), device: device)
        let maxCentrals = m?["max_centrals"]?.integer(in: 1...16) ?? D.maxCentrals
        let connection = parseConnection(m?["connection"]?.mapping("bluetooth.connection"))
        let security = parseSecurity(m?["security"]?.mapping("bluetooth.security"))
        let bthome = parseBTHome(m?["bthome"]?.mapping("bluetooth.bthome"))
        return BluetoothConfig(
            transport: transport, advertising: advertising, maxCentrals: maxCentrals,
            connection: connection, security: security, bthome: bthome)
    }

    /// The bind key is read here, so `gattway check` finds a missing or malformed key file.
    /// Messages name the file, never its contents.
    func parseBTHome(_ m: ConfigMapping?) -> BTHomeConfig {
        guard let node = m?["key_file"], let path = node.nonEmptyString() else { return BTHomeConfig() }
        let files = FileManager.default
        guard files.fileExists(atPath: path) else {
            node.report("\(path): no such file")
            return BTHomeConfig(keyFile: path)
        }
        guard files.isReadableFile(atPath: path), let data = files.contents(atPath: path) else {
            node.report("\(path): cannot be read (permission denied?)")
            return BTHomeConfig(keyFile: path)
        }
        let text = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined()
        guard let key = BTHomeKey(hex: text) else {
            let digits = text.count == 32 ? "32 characters, not all hex digits" : "\(text.count) characters"
            node.report(
                "\(path): not a BTHome bind key: it must hold 32 hex digits (16 bytes) and holds \(digits)")
            return BTHomeConfig(keyFile: path)
        }
        var status = stat()
        if stat(path, &status) == 0, status.st_mode & 0o077 != 0 {
            node.warn(
                "\(path) is open to other users (mode 0\(String(status.st_mode & 0o777, radix: 8))); "
                    + "the bind key reads every broadcast: chmod 600 it")
        }
        return BTHomeConfig(key: key, keyFile: path)
    }

    func parseAdvertising(_ m: ConfigMapping?, device: DeviceConfig) -> AdvertisingConfig {
        let localName = m?["local_name"]?.nonEmptyString() ?? device.name
        let uuids = m?["service_uuids"]?.list()?.compactMap { $0.uuid() } ?? []
        let interval =
            m?["interval"]?.duration(in: .milliseconds(20)...(.milliseconds(10_240)))
            ?? D.advertisingInterval
        var includesTxPower = false
        if let node = m?["tx_power"] {
            if let text = node.node.scalar, Int(text) != nil {
                node.report(
                    "\(text) dBm cannot be set: tx_power is true or false (advertise the TX power "
                        + "level the controller reports; gattway cannot set the radio's power)")
            } else {
                includesTxPower = node.bool() ?? false
            }
        }
        var manufacturerData: ManufacturerData?
        if let data = m?["manufacturer_data"]?.mapping("bluetooth.advertising.manufacturer_data") {
            let company = data.required("company_id")?.integer(UInt16.self)
            let bytes = data.required("data")?.hexBytes()
            if let company, let bytes { manufacturerData = ManufacturerData(companyID: company, data: bytes) }
        }
        // A legacy advertisement is 31 bytes: flags take 3, the AD header 2, the company id 2.
        if let manufacturerData, manufacturerData.data.count > 24, let node = m?["manufacturer_data"] {
            node.context.error(
                node.path.key("data"), line: nil,
                "\(manufacturerData.data.count) bytes do not fit an advertisement (at most 24); shorten it")
        }
        return AdvertisingConfig(
            localName: localName, serviceUUIDs: uuids, interval: interval,
            includesTxPower: includesTxPower, manufacturerData: manufacturerData)
    }

    func parseConnection(_ m: ConfigMapping?) -> ConnectionPreferences {
        let intervalRange = Duration.microseconds(7_500)...Duration.seconds(4)
        let minInterval = m?["min_interval"]?.duration(in: intervalRange) ?? D.connectionMinInterval
        let maxInterval = m?["max_interval"]?.duration(in: intervalRange) ?? D.connectionMaxInterval
        let latency = m?["latency"]?.integer(in: 0...499) ?? D.connectionLatency
        let timeout =
            m?["supervision_timeout"]?.duration(in: .milliseconds(100)...(.seconds(32)))
            ?? D.supervisionTimeout
        if let m, minInterval > maxInterval {
            m.node.context.error(
                m.path.key("min_interval"), line: nil,
                "\(DurationText.format(minInterval)) is longer than max_interval "
                    + "(\(DurationText.format(maxInterval)))")
        }
        // Core Vol 6 Part B 4.5.2: the timeout must exceed (1 + latency) × interval × 2.
        let shortest = maxInterval * (2 * (1 + latency))
        if let m, timeout <= shortest {
            m.node.context.error(
                m.path.key("supervision_timeout"), line: nil,
                "\(DurationText.format(timeout)) is too short for max_interval "
                    + "\(DurationText.format(maxInterval)) and latency \(latency) "
                    + "(must exceed \(DurationText.format(shortest)))")
        }
        return ConnectionPreferences(
            minInterval: minInterval, maxInterval: maxInterval,
            latency: latency, supervisionTimeout: timeout, asksCentrals: m != nil)
    }

    func parseSecurity(_ m: ConfigMapping?) -> SecurityConfig {
        let io = m?["io_capabilities"]?.choice(IOCapabilities.self) ?? D.ioCapabilities
        let passkey = m?["passkey"]?.integer(UInt32.self, in: 0...999_999)
        if passkey != nil, !io.canDisplay, let node = m?["passkey"] {
            node.warn(
                "a fixed passkey needs io_capabilities that display "
                    + "(display_only, display_yes_no or keyboard_display); with \(io.rawValue) it is unused")
        }
        let allowLegacy = m?["allow_legacy"]?.bool() ?? D.allowLegacy
        let confirmWith = m?["confirm_with"]?.nonEmptyString()
        if let node = m?["confirm_with"], confirmWith != nil, !io.canConfirm {
            node.report(
                "confirming numbers needs io_capabilities display_yes_no or keyboard_display "
                    + "(it is \(io.rawValue))")
        } else if io.canConfirm, confirmWith == nil, let node = m?["io_capabilities"] {
            node.warn(
                "without confirm_with (a button to confirm the number), pairings that need "
                    + "Numeric Comparison are refused")
        }
        let pairing = m?["pairing"]?.choice(PairingPolicy.self) ?? D.pairing
        let windowRange = Duration.seconds(10)...Duration.seconds(3600)
        let pairingWindow = m?["pairing_window"]?.duration(in: windowRange) ?? D.pairingWindow
        let firstStartWindow = m?["first_start_window"]?.duration(in: .zero...Duration.seconds(3600)) ?? D.firstStartWindow
        let pairWith = m?["pair_with"]?.nonEmptyString()
        let pairPress = m?["pair_press"]?.duration(in: .milliseconds(500)...Duration.seconds(30)) ?? D.pairPress
        if pairing == .open {
            for key in ["pairing_window", "first_start_window", "pair_with", "pair_press"] {
                m?[key]?.warn("unused with pairing: open (new centrals may pair at any time)")
            }
        }
        if let pairWith, pairWith == confirmWith, let node = m?["pair_with"] {
            node.report("\"\(pairWith)\" already confirms numbers (confirm_with); give pairing its own button")
        }
        return SecurityConfig(
            ioCapabilities: io, passkey: passkey, allowLegacy: allowLegacy, confirmWith: confirmWith,
            pairing: pairing, pairingWindow: pairingWindow, firstStartWindow: firstStartWindow, pairWith: pairWith,
            pairPress: pairPress)
    }

    // MARK: mqtt

    /// A file the mirror reads when it connects, checked now so that `gattway check` finds a
    /// typo rather than the mirror, later, in the log. Messages name the file, never its contents.
    func checkReadable(_ path: String, at node: ConfigNode) {
        var status = stat()
        if stat(path, &status) != 0 {
            node.report("\(path): " + (errno == ENOENT ? "no such file" : String(cString: strerror(errno))))
        } else if status.st_mode & S_IFMT == S_IFDIR {
            node.report("\(path): a directory, not a file")
        } else if access(path, R_OK) != 0 {
            node.report("\(path): cannot be read (permission denied?)")
        }
    }

    func parseMQTT(_ m: ConfigMapping, device: DeviceConfig) -> MQTTConfig {
        var broker = MQTTBrokerURL(host: "localhost", port: 1883, usesTLS: false)
        if let node = m.required("url"), let text = node.nonEmptyString() {
            do {
                broker = try MQTTBrokerURL(parsing: text)
            } catch {
                node.report(error.description)
            }
        }
        let clientID = m["client_id"]?.nonEmptyString() ?? D.mqttClientID(deviceID: device.id)
        let username = m["username"]?.nonEmptyString()
        var password: MQTTPasswordSource?
        if let node = m["password_file"], let file = node.nonEmptyString() {
            password = .file(file)
            checkReadable(file, at: node)
            if username == nil { node.report("a password needs username as well (the broker is sent none without it)") }
        }
        if let env = m["password_env"]?.nonEmptyString() {
            if password != nil {
                m.node.context.error(
                    m.path.key("password_env"), line: nil,
                    "give the password either by password_file or by password_env, not both")
            }
            password = .environment(env)
        }
        var tls: MQTTTLSConfiguration?
        if let t = m["tls"]?.mapping("mqtt.tls") {
            let config = MQTTTLSConfiguration(
                caFile: t["ca"]?.nonEmptyString(), certificateFile: t["cert"]?.nonEmptyString(),
                keyFile: t["key"]?.nonEmptyString())
            for key in ["ca", "cert", "key"] {
                if let node = t[key], let path = node.nonEmptyString() { checkReadable(path, at: node) }
            }
            if !broker.usesTLS {
                t.node.report("TLS files need an mqtts:// url")
            }
            if (config.certificateFile == nil) != (config.keyFile == nil) {
                t.node.report("cert and key go together; give both or neither")
            } else if config.certificateFile != nil, config.caFile == nil {
                // libmosquitto takes a client certificate only together with a CA file.
                t.node.report("a client certificate (cert, key) needs ca as well")
            }
            tls = config
        }
        var baseTopic = D.mqttBaseTopic
        if let node = m["base_topic"], let text = node.nonEmptyString() {
            if text.contains("+") || text.contains("#") || text.hasPrefix("/") || text.hasSuffix("/") {
                node.report("\"\(text)\" must not contain + or # nor start or end with /")
            } else {
                baseTopic = text
            }
        }
        let qos = m["qos"]?.integer(in: 0...2) ?? D.mqttQoS
        let retain = m["retain"]?.bool() ?? D.mqttRetain
        let discovery = m["discovery"]?.bool() ?? D.mqttDiscovery
        let prefix = m["discovery_prefix"]?.nonEmptyString() ?? D.mqttDiscoveryPrefix
        let version = m["protocol"]?.choice(MQTTProtocolVersion.self) ?? D.mqttProtocol
        let keepalive = m["keepalive"]?.duration(in: .seconds(5)...(.seconds(65_535))) ?? D.mqttKeepalive
        let payload = m["payload"]?.choice(MirrorPayloadStyle.self) ?? D.mqttPayload
        let outbox = m["outbox_limit"]?.integer(in: 1...1_000_000) ?? D.mqttOutboxLimit
        return MQTTConfig(
            broker: broker, clientID: clientID, username: username, password: password,
            tls: tls, baseTopic: baseTopic, qos: qos, retain: retain,
            discoveryPrefix: discovery ? prefix : nil, protocolVersion: version,
            keepalive: keepalive, payload: payload, outboxLimit: outbox)
    }
}
