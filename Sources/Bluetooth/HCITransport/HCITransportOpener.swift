import BluetoothHCI
import CBlueZ
import EventLoop
import Glibc

extension HCITransportSpec {
    /// Opens the transport this spec names. Failures carry a message saying what to do.
    public func open() throws(HCITransportError) -> any HCITransport {
        let descriptor: Int32
        switch self {
        case .userChannel(let adapter): descriptor = try UserChannel.open(adapter: adapter)
        case .tcp(let host, let port): descriptor = try StreamSocket.connectTCP(host: host, port: port)
        case .unix(let path): descriptor = try StreamSocket.connectUnix(path: path)
        case .serial(let device, let baudRate):
            descriptor = try SerialPort.open(device: device, baudRate: baudRate)
        }
        return FileDescriptorTransport(descriptor: descriptor, spec: self)
    }
}

func systemErrorText(_ code: Int32) -> String { String(cString: strerror(code)) }

/// The Linux HCI user channel: exclusive, raw access to one adapter (AF_BLUETOOTH, BTPROTO_HCI,
/// HCI_CHANNEL_USER). The kernel only grants it while the adapter is down.
enum UserChannel {
    /// HCIDEVDOWN is `_IOW('H', 202, int)`, a macro Swift cannot import.
    static let hciDeviceDown = UInt(1 << 30 | MemoryLayout<Int32>.size << 16 | 0x48 << 8 | 202)

    static func open(adapter: UInt16) throws(HCITransportError) -> Int32 {
        let descriptor = socket(
            AF_BLUETOOTH, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
            BTPROTO_HCI)
        guard descriptor >= 0 else {
            let code = errno
            if code == EAFNOSUPPORT {
                throw HCITransportError(
                    .notFound,
                    "this kernel has no Bluetooth support (AF_BLUETOOTH: \(systemErrorText(code))); "
                        + "load the bluetooth module")
            }
            throw HCITransportError(.notFound, "cannot create a Bluetooth socket: \(systemErrorText(code))")
        }
        if ioctl(descriptor, hciDeviceDown, Int32(adapter)) < 0 {
            let code = errno
            Glibc.close(descriptor)
            throw explain(code, adapter: adapter, step: .bringingDown)
        }
        var address = sockaddr_hci()
        address.hci_family = sa_family_t(AF_BLUETOOTH)
        address.hci_dev = adapter
        address.hci_channel = UInt16(HCI_CHANNEL_USER)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_hci>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw explain(code, adapter: adapter, step: .binding)
        }
        return descriptor
    }

    /// The two system calls of opening an adapter, which give the same errno different meanings.
    enum Step {
        /// HCIDEVDOWN.
        case bringingDown
        /// bind with HCI_CHANNEL_USER.
        case binding
    }

    /// The user-facing reason for a failed HCIDEVDOWN or bind, by errno.
    static func explain(_ code: Int32, adapter: UInt16, step: Step) -> HCITransportError {
        let name = "hci\(adapter)"
        let failed =
            switch step {
            case .bringingDown: "bringing \(name) down failed"
            case .binding: "opening the user channel on \(name) failed"
            }
        switch (code, step) {
        case (EPERM, _), (EACCES, _):
            return HCITransportError(
                .permissionDenied,
                "\(failed): permission denied (EPERM); gattway needs CAP_NET_ADMIN "
                    + "(run it as root or grant it: AmbientCapabilities=CAP_NET_ADMIN)")
        case (EBUSY, .bringingDown), (EUSERS, _):
            // One socket at a time may hold an adapter's user channel. While one does, the kernel
            // refuses HCIDEVDOWN with EBUSY (hci_dev_close checks HCI_USER_CHANNEL first, and
            // nothing else there answers EBUSY); the bind itself says EUSERS, or EBUSY when the
            // holder has brought the adapter up (hci_sock_bind checks HCI_UP first).
            let errnoName = code == EUSERS ? "EUSERS" : "EBUSY"
            return HCITransportError(
                .busy,
                "\(failed): another program holds \(name) through the HCI user channel "
                    + "(\(errnoName)), and only one can. Stop it (another gattway, or a tool such as "
                    + "btproxy or a Bumble controller bridge), or give gattway another adapter")
        case (EBUSY, .binding), (EALREADY, _):
            return HCITransportError(
                .busy,
                "\(failed): \(name) is in use (EBUSY); bluetoothd or another program holds "
                    + "it. Stop it (systemctl stop bluetooth) or exclude \(name) from it, then retry")
        case (ERFKILL, _):
            return HCITransportError(
                .rfkillBlocked,
                "\(failed): \(name) is blocked by rfkill (ERFKILL); unblock it with "
                    + "`rfkill unblock bluetooth` (systemd-rfkill restores a block at every boot "
                    + "until it is lifted)")
        case (ENODEV, _), (ENXIO, _):
            return HCITransportError(
                .notFound,
                "\(failed): no such adapter \(name) (ENODEV); list adapters with "
                    + "`ls /sys/class/bluetooth`")
        default:
            return HCITransportError(.unavailable, "\(failed): \(systemErrorText(code)) (errno \(code))")
        }
    }
}

/// H4 over a stream socket.
enum StreamSocket {
    static func connectTCP(host: String, port: UInt16) throws(HCITransportError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw HCITransportError(
                .unavailable, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = ECONNREFUSED
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let info = entry {
            entry = info.pointee.ai_next
            let descriptor = socket(
                info.pointee.ai_family,
                info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                info.pointee.ai_protocol)
            guard descriptor >= 0 else {
                lastError = errno
                continue
            }
            if connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                // HCI packets are small and latency-bound: never wait to coalesce them.
                var one: Int32 = 1
                setsockopt(
                    descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one,
                    socklen_t(MemoryLayout<Int32>.size))
                return descriptor
            }
            lastError = errno
            Glibc.close(descriptor)
        }
        throw HCITransportError(
            .unavailable, "cannot connect to tcp:\(host):\(port): \(systemErrorText(lastError))")
    }

    static func connectUnix(path: String) throws(HCITransportError) -> Int32 {
        guard path.utf8.count <= UnixSocketAddress.maximumPathLength else {
            throw HCITransportError(
                .notFound, "unix:\(path): the path is longer than \(UnixSocketAddress.maximumPathLength) bytes")
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw HCITransportError(.unavailable, "cannot create a Unix socket: \(systemErrorText(errno))")
        }
        let result = UnixSocketAddress.with(path) { connect(descriptor, $0, $1) }
        guard result == 0 else {
            let code = errno
            Glibc.close(descriptor)
            let kind: HCITransportError.Kind = code == ENOENT ? .notFound : .unavailable
            throw HCITransportError(kind, "cannot connect to unix:\(path): \(systemErrorText(code))")
        }
        return descriptor
    }
}

/// H4 over a UART: raw mode, 8N1, RTS/CTS flow control as the H4 UART transport requires
/// (Core Vol 4 Part A 1).
enum SerialPort {
    static func speed(for baudRate: Int) -> speed_t? {
        let table: [Int: Int32] = [
            9_600: B9600, 19_200: B19200, 38_400: B38400, 57_600: B57600, 115_200: B115200,
            230_400: B230400, 460_800: B460800, 500_000: B500000, 576_000: B576000,
            921_600: B921600, 1_000_000: B1000000, 1_152_000: B1152000, 1_500_000: B1500000,
            2_000_000: B2000000, 2_500_000: B2500000, 3_000_000: B3000000, 3_500_000: B3500000,
            4_000_000: B4000000
        ]
        return table[baudRate].map { speed_t($0) }
    }

    static func open(device: String, baudRate: Int) throws(HCITransportError) -> Int32 {
        guard let speed = speed(for: baudRate) else {
            throw HCITransportError(.notFound, "serial:\(device): unsupported baud rate \(baudRate)")
        }
        let descriptor = Glibc.open(device, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else {
            let code = errno
            let kind: HCITransportError.Kind =
                code == ENOENT ? .notFound : (code == EACCES || code == EPERM ? .permissionDenied : .unavailable)
            let hint = kind == .permissionDenied ? " (add the user to the dialout group)" : ""
            throw HCITransportError(kind, "cannot open \(device): \(systemErrorText(code))\(hint)")
        }
        var settings = termios()
        guard tcgetattr(descriptor, &settings) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw HCITransportError(.notFound, "\(device) is not a serial port: \(systemErrorText(code))")
        }
        cfmakeraw(&settings)
        settings.c_cflag |= tcflag_t(CLOCAL | CREAD) | tcflag_t(CRTSCTS)
        settings.c_cflag &= ~tcflag_t(CSTOPB)
        cfsetispeed(&settings, speed)
        cfsetospeed(&settings, speed)
        guard tcsetattr(descriptor, TCSANOW, &settings) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw HCITransportError(
                .unavailable, "cannot set \(device) to \(baudRate) baud raw: \(systemErrorText(code))")
        }
        tcflush(descriptor, TCIOFLUSH)
        return descriptor
    }
}
