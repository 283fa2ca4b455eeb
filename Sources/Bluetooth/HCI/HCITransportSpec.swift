/// Where gattway reaches its Bluetooth controller, as written on the command line (`--hci`) or in
/// the configuration (`bluetooth.transport`).
public enum HCITransportSpec: Hashable, Sendable, CustomStringConvertible {
    /// `hciN`: the Linux HCI user channel on adapter N (exclusive use of the adapter).
    case userChannel(adapter: UInt16)
    /// `tcp:HOST:PORT`: H4 framing over TCP, e.g. to a virtual controller.
    case tcp(host: String, port: UInt16)
    /// `unix:PATH`: H4 framing over a Unix stream socket.
    case unix(path: String)
    /// `serial:DEVICE[,BAUD]`: H4 framing over a UART.
    case serial(device: String, baudRate: Int)

    public static let defaultBaudRate = 115_200
    /// Rates a Linux UART accepts through termios' Bxxx constants.
    public static let supportedBaudRates = [
        9_600, 19_200, 38_400, 57_600, 115_200, 230_400, 460_800, 500_000, 576_000, 921_600,
        1_000_000, 1_152_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000
    ]

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let text: String
        public let reason: String

        public init(text: String, reason: String) {
            self.text = text
            self.reason = reason
        }

        public var description: String {
            "\"\(text)\" is not an HCI transport: \(reason) "
                + "(expected hciN, tcp:HOST:PORT, unix:PATH or serial:DEVICE[,BAUD])"
        }
    }

    public init(parsing text: String) throws(ParseError) {
        func fail(_ reason: String) -> ParseError { ParseError(text: text, reason: reason) }

        if text.hasPrefix("hci") {
            let number = text.dropFirst(3)
            guard !number.isEmpty, number.allSatisfy(\.isASCII), let adapter = UInt16(number),
                adapter < 256
            else {
                throw fail("the adapter number must be 0-255, as in hci0")
            }
            self = .userChannel(adapter: adapter)
            return
        }
        guard let colon = text.firstIndex(of: ":") else {
            throw fail("unknown transport")
        }
        let scheme = text[..<colon]
        let rest = String(text[text.index(after: colon)...])
        switch scheme {
        case "tcp":
            guard let portColon = rest.lastIndex(of: ":") else { throw fail("missing :PORT") }
            var host = String(rest[..<portColon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw fail("missing HOST") }
            guard let port = UInt16(rest[rest.index(after: portColon)...]), port > 0 else {
                throw fail("the port must be 1-65535")
            }
            self = .tcp(host: host, port: port)
        case "unix":
            guard !rest.isEmpty else { throw fail("missing PATH") }
            self = .unix(path: rest)
        case "serial":
            let parts = rest.split(separator: ",", omittingEmptySubsequences: false)
            guard let device = parts.first, !device.isEmpty else { throw fail("missing DEVICE") }
            guard parts.count <= 2 else { throw fail("too many commas") }
            var baudRate = Self.defaultBaudRate
            if parts.count == 2 {
                guard let rate = Int(parts[1]), Self.supportedBaudRates.contains(rate) else {
                    throw fail("unsupported baud rate \"\(parts[1])\"")
                }
                baudRate = rate
            }
            self = .serial(device: String(device), baudRate: baudRate)
        default:
            throw fail("unknown transport \"\(scheme)\"")
        }
    }

    public var description: String {
        switch self {
        case .userChannel(let adapter): "hci\(adapter)"
        case .tcp(let host, let port): host.contains(":") ? "tcp:[\(host)]:\(port)" : "tcp:\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        case .serial(let device, let baudRate): "serial:\(device),\(baudRate)"
        }
    }
}
