#if canImport(Glibc)
import Glibc
#endif
import Testing
import Gateway

@Suite struct SystemdNotifierTests {
    /// Binds a datagram socket where systemd's would be and returns what the notifier sends.
    @Test func sendsReadyAndStatusAsOneDatagram() throws {
        let path = "/tmp/gattway-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        try #require(bound == 0)

        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": path])
        notifier.ready(status: "advertising on hci0")

        var buffer = [UInt8](repeating: 0, count: 256)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        try #require(count > 0)
        #expect(String(decoding: buffer[..<count], as: UTF8.self) == "READY=1\nSTATUS=advertising on hci0")
    }

    @Test func withoutNotifySocketNothingIsSent() {
        #expect(SystemdNotifier(environment: [:]).send("READY=1") == false)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]).send("READY=1") == false)
    }
}
