import Foundation
import TestHarness
import Testing

/// gattway's executable end to end: a YAML configuration, the harness's virtual controller,
/// optionally a mosquitto broker, and `gattway run --config FILE --hci TRANSPORT` as a child
/// process, up and advertising; phones (Bumble centrals) connect to it.
///
///     let rig = try await GatewayRig(config: yaml, advertisedName: "e2e")
///     defer { rig.stop() }
///     let (phone, found) = try await rig.connectedPhone(mtu: 517)
///
/// The transport comes from `GATTWAY_E2E_TRANSPORT`: unset or `tcp`, H4 over TCP to the virtual
/// controller; `vhci` (set inside the VM stage, Tests/vm/hci-user-channel-tests.sh), the virtual
/// controller attaches its controller to the kernel through /dev/vhci and gattway opens that
/// adapter (`hciN`) through the HCI user channel. Phones reach the virtual link over TCP either way.
final class GatewayRig: @unchecked Sendable {
    enum Transport: String, Sendable {
        case tcp, vhci

        /// From `GATTWAY_E2E_TRANSPORT`; anything else is a failure, never a silent fallback.
        static func fromEnvironment() throws -> Transport {
            let text = ProcessInfo.processInfo.environment["GATTWAY_E2E_TRANSPORT"] ?? "tcp"
            guard let transport = Transport(rawValue: text) else {
                throw TestFailure("GATTWAY_E2E_TRANSPORT=\(text): expected tcp or vhci")
            }
            return transport
        }
    }

    let transport: Transport
    /// The name phones scan for (the configuration's local name).
    let advertisedName: String
    /// The configuration file as written: the given text plus `state_dir` and `runtime_dir`.
    let configPath: String
    /// A fresh directory per rig: gattway's `state_dir` and `runtime_dir` are in it (and the
    /// configuration file).
    let directory: URL
    let broker: Broker?
    private(set) var gattway: GattwayProcess
    /// `gattway run`'s arguments and environment, for `restartGattway`.
    private let runArguments: [String]
    private let runEnvironment: [String: String]
    /// The log of the gattway processes `restartGattway` stopped.
    private var earlierLog = ""
    /// `--hci` as passed: `tcp:127.0.0.1:PORT`, or `hciN` with the vhci transport.
    let hci: String
    private(set) var controller: VirtualController
    private var phones: [Phone] = []
    private var stopped = false
    private let lock = NSLock()

    /// Writes `config` (which must not set `state_dir` or `runtime_dir`; the rig adds them) and
    /// starts everything; returns once gattway's log says it is advertising. `broker`: a private
    /// mosquitto, passed with `--mqtt`. `arguments` are added to `gattway run`'s, `environment`
    /// to its environment.
    init(
        config: String, advertisedName: String, broker withBroker: Bool = false,
        arguments: [String] = ["--log-level", "info"], environment: [String: String] = [:]
    ) async throws {
        transport = try Transport.fromEnvironment()
        self.advertisedName = advertisedName
        directory = try temporaryDirectory("e2e")
        let stateDirectory = directory.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: stateDirectory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("gattway.yaml")
        let runtimeDirectory = directory.appendingPathComponent("run").path
        try (config + "\nstate_dir: \(stateDirectory.path)\nruntime_dir: \(runtimeDirectory)\n")
            .write(to: file, atomically: true, encoding: .utf8)
        configPath = file.path

        controller = try await Self.startController(port: 0, transport: transport)
        hci = try Self.hciArgument(controller, transport)
        broker = withBroker ? try Broker() : nil
        var all = ["run", "--config", configPath, "--hci", hci] + arguments
        if let broker { all += ["--mqtt", "mqtt://127.0.0.1:\(broker.port)"] }
        runArguments = all
        runEnvironment = environment
        gattway = GattwayProcess(all, environment: environment)
        try gattway.start()
        try waitForAdvertising(since: 0, timeout: 60)
    }

    private static func startController(port: Int, transport: Transport) async throws -> VirtualController {
        try await VirtualController(port: port, extraArguments: transport == .vhci ? ["--vhci", "/dev/vhci"] : [])
    }

    private static func hciArgument(_ controller: VirtualController, _ transport: Transport) throws -> String {
        switch transport {
        case .tcp: return "tcp:127.0.0.1:\(controller.tcpPort)"
        case .vhci:
            guard let adapter = controller.kernelAdapter else {
                throw TestFailure("the virtual controller attached no kernel adapter; see \(controller.logPath)")
            }
            return "hci\(adapter)"
        }
    }

    // MARK: The log

    /// gattway's stderr so far (one line per event), of every process `restartGattway` started.
    var log: String { earlierLog + gattway.stderr }

    /// A position in the log (bytes so far), for waiting on what comes after it.
    var logMark: Int { log.utf8.count }

    /// The log after `mark`.
    func log(since mark: Int) -> String { String(decoding: log.utf8.dropFirst(mark), as: UTF8.self) }

    /// Waits until the log after `mark` contains `text`; false on timeout or when gattway exited
    /// without writing it.
    @discardableResult
    func waitForLog(_ text: String, since mark: Int = 0, timeout: TimeInterval = 30) -> Bool {
        let earlier = earlierLog
        gattway.wait(timeout: timeout) { _, stderr, finished in
            finished || String(decoding: (earlier + stderr).utf8.dropFirst(mark), as: UTF8.self).contains(text)
        }
        return log(since: mark).contains(text)
    }

    /// gattway logs "advertising" (GatewayService) each time the host starts advertising.
    static let advertisingLine = "gattway: advertising\n"

    private func waitForAdvertising(since mark: Int, timeout: TimeInterval) throws {
        guard waitForLog(Self.advertisingLine, since: mark, timeout: timeout) else {
            throw TestFailure("gattway did not start advertising within \(Int(timeout)) s on \(hci):\n\(log)")
        }
    }

    // MARK: The process

    var pid: pid_t { gattway.pid }

    /// gattway's resident set size (VmRSS) in kB, nil once it has exited.
    var residentKilobytes: Int? { processStatus("VmRSS") }

    /// gattway's thread count.
    var threads: Int? { processStatus("Threads") }

    /// A numeric field of gattway's /proc/PID/status.
    private func processStatus(_ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return nil }
        return line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    }

    /// SIGTERM and wait for a graceful exit (gattway promises 2 s); its status, nil on timeout.
    /// Phones, the controller and the broker are stopped too; gattway's log is saved as
    /// `gattway.log` in the rig's directory.
    @discardableResult
    func stop(timeout: TimeInterval = 5) -> Int32? {
        guard
            lock.withLock({
                defer { stopped = true }
                return !stopped
            })
        else { return nil }
        var status = gattway.waitForExit(timeout: 0)  // already gone (killed, or it failed)
        if status == nil {
            gattway.signal(SIGTERM)
            status = gattway.waitForExit(timeout: timeout)
            if status == nil {
                gattway.signal(SIGKILL)
                _ = gattway.waitForExit(timeout: 5)
            }
        }
        for phone in lock.withLock({ phones }) { phone.kill() }
        controller.stop()
        broker?.stop()
        // Kept for a look after a failure; the path goes to the test's output.
        let saved = directory.appendingPathComponent("gattway.log")
        try? log.write(to: saved, atomically: true, encoding: .utf8)
        FileHandle.standardError.write(Data("gattway's log: \(saved.path); the controller's: \(controller.logPath)\n".utf8))
        return status
    }

    /// Stops gattway gracefully (SIGTERM) and starts it again with the same configuration, state
    /// directory and controller; returns once it advertises again.
    func restartGattway() throws {
        let mark = logMark
        gattway.signal(SIGTERM)
        guard gattway.waitForExit(timeout: 5) != nil else {
            throw TestFailure("gattway did not stop within 5 s of SIGTERM:\n\(log(since: mark))")
        }
        earlierLog = log
        gattway = GattwayProcess(runArguments, environment: runEnvironment)
        try gattway.start()
        try waitForAdvertising(since: mark, timeout: 60)
    }

    /// SIGKILL: no shutdown at all.
    func kill() {
        guard lock.withLock({ !stopped }) else { return }
        gattway.signal(SIGKILL)
        _ = gattway.waitForExit(timeout: 5)
    }

    // MARK: The controller

    /// Drops the virtual controller (like a controller losing power: every socket closes, with
    /// vhci the kernel adapter disappears) and starts a new one on the same TCP port; returns once
    /// gattway has noticed, recovered by itself and advertises again. With vhci, the kernel may
    /// give the new adapter another index: `reattachedAdapter` says which one it gave.
    @discardableResult
    func restartController(timeout: TimeInterval = 120) async throws -> String {
        let mark = logMark
        let port = controller.tcpPort
        controller.stop()
        guard waitForLog("lost the controller", since: mark, timeout: 10) else {
            throw TestFailure("gattway did not notice the controller going away:\n\(log(since: mark))")
        }
        controller = try await Self.startController(port: port, transport: transport)
        try waitForAdvertising(since: mark, timeout: timeout)
        return try Self.hciArgument(controller, transport)
    }

    // MARK: Phones

    /// A phone on the virtual link, not yet connected; stopped with the rig.
    func phone() async throws -> Phone {
        let phone = try await Phone(controllerPort: controller.tcpPort)
        lock.withLock { phones.append(phone) }
        return phone
    }

    /// `count` phones started at once (each is a Python process; starting them together overlaps
    /// their start-up, which matters in the VM), in no particular order.
    func phones(_ count: Int) async throws -> [Phone] {
        try await withThrowingTaskGroup(of: Phone.self) { group in
            for _ in 0..<count { group.addTask { try await self.phone() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }

    /// Scans for gattway by its advertised name, connects (and exchanges `mtu` when given);
    /// returns the scan result (address, name, uuids, advertising data).
    @discardableResult
    func connect(_ phone: Phone, mtu: Int? = nil) async throws -> PhoneReply {
        let found = try await phone.run("scan", ["name": advertisedName, "timeout": 10])
        guard found.ok, let address = found.string("address") else {
            throw TestFailure("a phone did not find \"\(advertisedName)\": \(found.error ?? "?")\n\(log)")
        }
        let connected = try await phone.run("connect", ["address": address, "timeout": 10])
        guard connected.ok else { throw TestFailure("a phone could not connect: \(connected.error ?? "?")") }
        if let mtu {
            let exchanged = try await phone.run("mtu", ["mtu": mtu])
            guard exchanged.ok else { throw TestFailure("MTU exchange failed: \(exchanged.error ?? "?")") }
        }
        return found
    }

    /// A new phone, connected (see `connect`).
    func connectedPhone(mtu: Int? = nil) async throws -> (phone: Phone, found: PhoneReply) {
        let phone = try await phone()
        return (phone, try await connect(phone, mtu: mtu))
    }

    deinit { stop(timeout: 3) }

    /// A configuration with one binary sensor on a simulated line held at 1, served as a `bool`
    /// characteristic `<service>/<name>` (service UUID `6E400001-…-<suffix>`, characteristic
    /// `6E400002-…-<suffix>`).
    static func binarySensorConfig(device: String, service: String, name: String, uuidSuffix: String) -> String {
        """
        device: {name: \(device)}
        gpio:
          backend: simulated
          chips:
            - lines:
                - {name: GPIO17, generator: {type: constant, level: 1}}
        sensors:
          - {id: \(name), kind: binary, line: GPIO17}
        services:
          - uuid: 6E400001-B5A3-F393-E0A9-\(uuidSuffix)
            name: \(service)
            characteristics:
              - uuid: 6E400002-B5A3-F393-E0A9-\(uuidSuffix)
                name: \(name)
                format: bool
                source: {sensor: \(name)}
        """
    }
}
