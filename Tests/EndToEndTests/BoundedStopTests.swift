import Config
import Foundation
import Gateway
import Glibc
import TestHarness
import Testing

/// `gattway run` stops, and `gattway reload` answers, within their bounds whatever the broker
/// does: here a broker address on loopback that never answers. With a full accept queue the
/// kernel drops the SYN, so the MQTT client's connect waits for minutes (a firewalled host, as far
/// as it can tell); with room in the queue the TCP connection is made but nothing ever speaks on
/// it (a TLS handshake, or a CONNACK, that never comes).
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct BoundedStopTests {
    /// A listening socket on 127.0.0.1 that never accepts. `dropsConnections`: its accept queue
    /// (backlog 0) is filled first, so a new connection's SYN goes unanswered.
    final class Blackhole {
        let port: Int
        private var descriptors: [Int32] = []

        init(dropsConnections: Bool) throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            descriptors.append(listener)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(listener, pointer, length) == 0 && listen(listener, dropsConnections ? 0 : 16) == 0
                        && getsockname(listener, pointer, &length) == 0
                }
            }
            guard bound else { throw TestFailure("cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))") }
            port = Int(UInt16(bigEndian: address.sin_port))
            guard dropsConnections else { return }
            // One connection fills a backlog of 0; the kernel drops the SYNs of the next ones.
            _ = try connectWithoutWaiting()
            Thread.sleep(forTimeInterval: 0.2)
            let probe = try connectWithoutWaiting()
            var poll = pollfd(fd: probe, events: Int16(POLLOUT), revents: 0)
            guard Glibc.poll(&poll, 1, 500) == 0 else {
                throw TestFailure("a connection to the full listener was answered: the kernel did not drop its SYN")
            }
        }

        private func connectWithoutWaiting() throws -> Int32 {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            descriptors.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard rc == 0 || errno == EINPROGRESS else { throw TestFailure("connect: \(String(cString: strerror(errno)))") }
            return descriptor
        }

        deinit { for descriptor in descriptors { close(descriptor) } }
    }

    static func config(port: Int, scheme: String, base: String) -> String {
        GatewayRig.binarySensorConfig(device: "blackhole", service: "door", name: "open", uuidSuffix: "E50E24DC0031")
            + "\nmqtt: {url: \"\(scheme)://127.0.0.1:\(port)\", base_topic: \(base)}"
    }

    /// (scheme, whether the connection's SYN is dropped): a plain connect that waits for the
    /// kernel's SYN retries, and a TLS handshake to a port that takes the connection and never
    /// answers.
    @Test(arguments: [("mqtt", true), ("mqtts", false)])
    func reloadAnswersAndRunStopsWithinTheirBounds(_ scheme: String, _ dropsConnections: Bool) async throws {
        let blackhole = try Blackhole(dropsConnections: dropsConnections)
        let rig = try await GatewayRig(
            config: Self.config(port: blackhole.port, scheme: scheme, base: "first"), advertisedName: "blackhole")
        defer { rig.stop() }
        // The client is in its connect (or handshake) by now: gattway advertises after it started.
        try await Task.sleep(for: .seconds(1))

        try Self.config(port: blackhole.port, scheme: scheme, base: "second")
            .appending(
                "\nstate_dir: \(rig.directory.appendingPathComponent("state").path)\nruntime_dir: \(rig.directory.appendingPathComponent("run").path)\n"
            )
            .write(toFile: rig.configPath, atomically: true, encoding: .utf8)
        // Asked on the control socket as `gattway reload` asks, timed from the request to the
        // answer: the bound is the service's, not that of starting a debug build's process.
        let config = try ConfigLoader.load(file: rig.configPath).config
        let reloadStart = ContinuousClock.now
        let reload = ControlClient.ask(ControlRequest(.reload), config: config)
        let reloadTook = ContinuousClock.now - reloadStart
        guard case .answered(let answer) = reload else { throw TestFailure("the reload was not answered: \(reload)") }
        #expect(
            answer.reload?.applied.contains("mqtt: the mirror reconnected with the new settings") == true,
            "\(answer)")
        #expect(reloadTook < .seconds(3), "the reload took \(reloadTook)")

        try await Task.sleep(for: .seconds(1))
        let stopStart = ContinuousClock.now
        rig.gattway.signal(SIGTERM)
        let status = rig.gattway.waitForExit(timeout: 10)
        let stopTook = ContinuousClock.now - stopStart
        #expect(status == 0, "gattway's exit status after SIGTERM: \(String(describing: status))")
        #expect(stopTook < .seconds(2), "gattway took \(stopTook) to stop:\n\(rig.log.suffix(3000))")
        withExtendedLifetime(blackhole) {}
    }
}
