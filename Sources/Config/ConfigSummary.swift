import ConfigReading

/// What a configuration would serve, in a few lines (`gattway check`, and the log at start-up).
public enum ConfigSummary {
    public static func lines(_ config: GatewayConfig) -> [String] {
        var lines: [String] = []
        let bluetooth = config.bluetooth
        lines.append(
            "device \"\(config.device.name)\" (id \(config.device.id)), transport \(bluetooth.transport), "
                + "up to \(bluetooth.maxCentrals) central\(bluetooth.maxCentrals == 1 ? "" : "s")")
        let advertised = bluetooth.advertising.serviceUUIDs.map(\.description).joined(separator: ", ")
        lines.append(
            "advertising \"\(bluetooth.advertising.localName)\" every "
                + DurationText.format(bluetooth.advertising.interval)
                + (advertised.isEmpty ? "" : " with \(advertised)"))
        lines.append(pairing(bluetooth.security))
        let characteristicCount = config.services.reduce(0) { $0 + $1.characteristics.count }
        lines.append("\(count(config.services.count, "service")), \(count(characteristicCount, "characteristic")):")
        for service in config.services {
            lines.append("  service \(service.uuid)\(quoted(service.name))\(service.primary ? "" : " (secondary)")")
            for characteristic in service.characteristics {
                lines.append("    \(characteristic.uuid)\(quoted(characteristic.name)) \(describe(characteristic))")
            }
        }
        lines.append(
            "\(count(config.sensors.count, "sensor")) on \(config.gpio.backend.rawValue)"
                + (config.sensors.isEmpty ? "" : ":"))
        for sensor in config.sensors {
            let lineNames = sensor.kind.lines.map(\.description).joined(separator: ", ")
            lines.append("  \(sensor.id): \(sensor.kind.name) on \(lineNames)")
        }
        let broadcast = config.sensors.filter(\.bthome).map(\.id)
        if !broadcast.isEmpty {
            lines.append(
                "BTHome broadcast of \(broadcast.joined(separator: ", ")), "
                    + (bluetooth.bthome.keyFile.map { "encrypted with the bind key in \($0)" } ?? "not encrypted"))
        }
        if let mqtt = config.mqtt {
            lines.append(
                "mqtt \(mqtt.broker) as \(mqtt.clientID), topics \(mqtt.baseTopic)/\(config.device.id)/…"
                    + (mqtt.discoveryPrefix.map { ", discovery under \($0)" } ?? ""))
        } else {
            lines.append("mqtt off")
        }
        return lines
    }

    /// Who may pair, and when: `pairing: window (2m by gattway pair or a 3s press of pair_button;
    /// 10m after a start without bonds), no_input_no_output`.
    private static func pairing(_ security: SecurityConfig) -> String {
        let how: String
        switch security.pairing {
        case .open:
            how = "open (anyone in range may pair at any time)"
        case .window:
            let opened =
                DurationText.format(security.pairingWindow) + " by gattway pair"
                + (security.pairWith.map { " or a \(DurationText.format(security.pairPress)) press of \($0)" } ?? "")
            let firstStart =
                security.firstStartWindow > .zero
                ? "\(DurationText.format(security.firstStartWindow)) after a start without bonds"
                : "closed at a start without bonds"
            how = "window (\(opened); \(firstStart))"
        }
        return "pairing: \(how), \(security.ioCapabilities.rawValue)"
    }

    private static func describe(_ characteristic: CharacteristicConfig) -> String {
        let properties = CharacteristicProperties.names.filter { characteristic.properties.contains($0.property) }
            .map(\.name).joined(separator: ", ")
        let encoding = characteristic.encoding
        var text =
            encoding.format.rawValue + (encoding.exponent == 0 ? "" : " e\(encoding.exponent)")
            + (characteristic.unit.map { " \($0.symbol)" } ?? "") + " [\(properties)] ← "
        switch characteristic.source {
        case .sensor(let id, let reading):
            text += "sensor \(id)" + (reading == .value ? "" : " \(reading.rawValue)")
        case .mqtt(let topic): text += "mqtt \(topic)"
        case .fixed: text += "static value"
        case .written: text += "written by centrals"
        }
        if characteristic.properties.isSubscribable, characteristic.notify.minInterval > .zero {
            text += ", at most every \(DurationText.format(characteristic.notify.minInterval))"
        }
        return text
    }

    private static func quoted(_ name: String?) -> String { name.map { " \"\($0)\"" } ?? "" }

    private static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}
