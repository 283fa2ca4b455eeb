import BluetoothCore
import BluetoothSMP
import Foundation
import TestHarness
import Testing

/// The `gattway` command line, run as a real process: exit codes and output.
@Suite(.serialized)
struct CLITests {
    private func temporaryFile(_ text: String, name: String = "gattway.yaml") throws -> String {
        let file = try temporaryDirectory("cli").appendingPathComponent(name)
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// A configuration for `gattway run` on simulated lines, with `extra` lines, in a state and a
    /// runtime directory of its own: a gattway run elsewhere in the suite holds neither.
    private func gatewayConfig(_ extra: String = "") throws -> String {
        let directory = try temporaryDirectory("cli-run").path
        return try temporaryFile(
            """
            gpio: {backend: simulated}
            state_dir: \(directory)/state
            runtime_dir: \(directory)/run
            \(extra)
            """)
    }

    @Test func versionPrintsTheVersion() throws {
        let result = try GattwayProcess(["--version"]).runToCompletion()
        #expect(result.status == 0)
        #expect(result.stdout == "0.1.0\n")
    }

    @Test(arguments: ["deploy/config/gattway.yaml", "deploy/config/demo.yaml"])
    func checkOfAShippedConfigurationSucceedsWithASummary(_ path: String) throws {
        let result = try GattwayProcess(["check", "--config", path]).runToCompletion()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("\(path): OK\n"))
        #expect(result.stdout.contains(" services, "))
        #expect(result.stdout.contains("  service 181A \"environment\""))
        #expect(result.stdout.contains("2A6E \"temperature\" sint16 e-2 °C [read, notify] ← sensor climate temperature"))
    }

    @Test func checkSummaryNamesTransportSensorsPairingAndMQTT() throws {
        let result = try GattwayProcess(["check", "--config", "deploy/config/demo.yaml"]).runToCompletion()
        #expect(result.stdout.contains("transport tcp:127.0.0.1:18820"))
        #expect(result.stdout.contains("7 sensors on simulated:"))
        #expect(result.stdout.contains("door: binary on GPIO17"))
        #expect(result.stdout.contains("pairing: window (2m by gattway pair; 10m after a start without bonds), no_input_no_output"))
        #expect(result.stdout.contains("mqtt mqtt://127.0.0.1:18830 as gattway-demo"))
        #expect(result.stderr.contains("warning: services[1].characteristics[4].permissions"))
    }

    @Test func checkOfABrokenConfigurationListsEveryErrorAndExits1() throws {
        let path = try temporaryFile(BrokenConfiguration.fiveMistakes)
        let result = try GattwayProcess(["check", "--config", path]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(
            result.stderr == """
                \(path): 5 errors
                  error: device.colour (line 3): unknown key (expected one of: name, name_add_suffix, id, appearance)
                  error: bluetooth.transport (line 5): "usb0" is not an HCI transport: unknown transport (expected hciN, tcp:HOST:PORT, unix:PATH or serial:DEVICE[,BAUD])
                  error: bluetooth.max_centrals (line 6): expected an integer, got "many"
                  error: services[0].characteristics[0].uuid (line 14): "2A6G" is not a UUID
                  error: services[0].characteristics[1].source.sensor (line 18): no sensor "dor"; did you mean "door"?

                """)
    }

    @Test func checkOfAMissingFileExits1() throws {
        let result = try GattwayProcess(["check", "--config", "/nonexistent.yaml"]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stderr.contains("/nonexistent.yaml: 1 error"))
        #expect(result.stderr.contains("no such file"))
    }

    @Test(arguments: ["hci300", "tcp:localhost", "serial:/dev/ttyAMA0,12345", "usb:0"])
    func badHCIIsAUsageError(_ transport: String) throws {
        let result = try GattwayProcess(["run", "--config", "deploy/config/demo.yaml", "--hci", transport]).runToCompletion()
        #expect(result.status == 64)
        #expect(
            result.stderr.contains(
                "Error: The value '\(transport)' is invalid for '--hci <transport>': \"\(transport)\" is not an HCI transport"))
    }

    @Test func badMQTTURLIsAUsageError() throws {
        let result = try GattwayProcess(["run", "--config", "deploy/config/demo.yaml", "--mqtt", "http://x"]).runToCompletion()
        #expect(result.status == 64)
        #expect(result.stderr.contains("is not a broker URL"))
    }

    @Test func unknownLogLevelIsAUsageError() throws {
        let result = try GattwayProcess(["run", "--config", "deploy/config/demo.yaml", "--log-level", "loud"]).runToCompletion()
        #expect(result.status == 64)
    }

    @Test func runWithABrokenConfigurationExits1() throws {
        let path = try temporaryFile(BrokenConfiguration.fiveMistakes)
        let result = try GattwayProcess(["run", "--config", path]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stderr.contains("5 errors"))
    }

    @Test(arguments: [Int32(SIGTERM), Int32(SIGINT)])
    func runStopsGracefullyOnSignalWithin2Seconds(_ signal: Int32) throws {
        // The MQTT outbox lives in the state directory.
        let path = try gatewayConfig(#"bluetooth: {transport: "tcp:127.0.0.1:9"}"#)
        let child = GattwayProcess([
            "run", "--config", path, "--hci", "tcp:127.0.0.1:19", "--mqtt", "mqtt://127.0.0.1:9",
            "--log-level", "info"
        ])
        try child.start()
        defer { child.stop() }
        #expect(child.wait(timeout: 30) { _, stderr, exited in exited || stderr.contains("gattway running") })
        // The command line overrides the file: transport, and an MQTT section with defaults.
        #expect(child.stderr.contains("transport tcp:127.0.0.1:19"))
        #expect(child.stderr.contains("mqtt mqtt://127.0.0.1:9 as gattway-gattway"))
        let sent = Date()
        child.signal(signal)
        let status = child.waitForExit(timeout: 2)
        #expect(status == 0, "\(child.stderr)")
        #expect(Date().timeIntervalSince(sent) < 2)
        #expect(child.stderr.contains("gattway stopped"))
    }

    /// A second gattway on a running one's state directory exits 1 naming it, and the first runs
    /// on; once the first is killed (no clean exit), the kernel has dropped its lock and a new one
    /// starts.
    @Test func aSecondGattwayOnTheSameStateDirectoryExits1NamingTheFirst() throws {
        let path = try gatewayConfig(#"bluetooth: {transport: "tcp:127.0.0.1:9"}"#)
        let first = GattwayProcess(["run", "--config", path])
        try first.start()
        defer { first.stop() }
        #expect(first.wait(timeout: 30) { _, stderr, exited in exited || stderr.contains("gattway running") })

        let second = try GattwayProcess(["run", "--config", path]).runToCompletion()
        #expect(second.status == 1)
        #expect(
            second.stderr.contains("gattway could not run: state directory ")
                && second.stderr.contains("/state is in use by another gattway (pid \(first.pid)); stop it first"),
            "\(second.stderr)")
        #expect(!second.stderr.contains("gattway running"))
        #expect(first.isRunning)

        first.stop(SIGKILL)
        #expect(first.waitForExit(timeout: 10) == SIGKILL)
        let third = GattwayProcess(["run", "--config", path])
        try third.start()
        defer { third.stop() }
        #expect(
            third.wait(timeout: 30) { _, stderr, exited in exited || stderr.contains("gattway running") }
                && third.isRunning, "\(third.stderr)")
    }

    /// Runs `arguments` until "gattway running" appears, then stops it with SIGINT; the stderr.
    /// How long the stop takes is `runStopsGracefullyOnSignalWithin2Seconds`'s matter: this waits
    /// up to 10 s, so a loaded machine cannot fail a test of what the log says.
    private func runBriefly(_ arguments: [String], journal: Bool = false) throws -> (status: Int32?, stderr: String) {
        let child = GattwayProcess(arguments, journalStandardError: journal)
        try child.start()
        defer { child.stop() }
        child.wait(timeout: 30) { _, stderr, finished in finished || stderr.contains("gattway running") }
        child.signal(SIGINT)
        return (child.waitForExit(timeout: 10), child.stderr)
    }

    @Test func runWithAMissingGPIOLineNamesItAndExits1() throws {
        let directory = try temporaryDirectory("cli-run").path
        let path = try temporaryFile(
            """
            gpio: {backend: libgpiod}
            state_dir: \(directory)/state
            runtime_dir: \(directory)/run
            sensors:
              - {id: door, kind: binary, line: NO_SUCH_LINE}
            """)
        let result = try GattwayProcess(["run", "--config", path]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stderr.contains("gattway could not run: sensor door: GPIO line NO_SUCH_LINE not found"))
    }

    /// libgpiod's chips through the GPIO layer: listed where the machine has chips, otherwise a
    /// clear message and status 1.
    @Test func linesListsTheKernelsChips() throws {
        let result = try GattwayProcess(["lines", "--backend", "libgpiod"]).runToCompletion()
        let chips = (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.filter { $0.hasPrefix("gpiochip") } ?? []
        if chips.isEmpty {
            #expect(result.status == 1)
            #expect(result.stderr == "no GPIO chips found (libgpiod looks under /dev for gpiochipN)\n")
        } else {
            #expect(result.status == 0)
            #expect(chips.allSatisfy { result.stdout.contains("\($0) [") })
        }
    }

    /// The whole demo loop: its own broker and MQTT view (`mqtt <topic> <payload>` lines), the
    /// virtual controller and the phone view (`phone …` lines: found, subscribed, notifications);
    /// Ctrl-C (SIGINT to the terminal's foreground process group) stops gattway first and then
    /// every helper, within 2 s.
    @Test(.disabled(if: integrationTestsStandAside, unitOnlyReason))
    func demoShowsThePhoneAndTheMQTTTraffic() throws {
        let port = try UInt16(freeLoopbackPort())
        let controllerPort = try UInt16(freeLoopbackPort())
        let child = GattwayProcess(["demo", "--mqtt", "mqtt://127.0.0.1:\(port)", "--hci", "tcp:127.0.0.1:\(controllerPort)"])
        try child.start()
        defer { child.stop() }
        #expect(
            child.wait(timeout: 60) { stdout, _, exited in
                exited
                    || (stdout.contains("mqtt gattway/demo/gateway/knob {\"value\":1,")
                        && stdout.contains("phone notification 6E400005-B5A3-F393-E0A9-E50E24DC0001 "))
            }, "\(child.stdout)\n\(child.stderr)")
        // Through the run path, on the demo configuration with the command line's overrides.
        #expect(
            child.stderr.contains(
                "INFO gattway: device \"gattway demo\" (id demo), transport tcp:127.0.0.1:\(controllerPort)"))
        #expect(child.stdout.contains("phone found \"gattway demo\""))
        #expect(child.stdout.contains("phone   characteristic 2A6E "))
        #expect(child.stdout.contains("phone subscribed to "))
        #expect(child.stdout.contains(#"mqtt gattway/demo/state {"state":"poweredOn","advertising":true,"#))
        #expect(child.stdout.contains("mqtt gattway/demo/availability online\n"))
        #expect(child.stdout.contains("mqtt gattway/demo/gateway/label {\"value\":\"gattway demo\","))
        child.signalGroup(SIGINT)
        #expect(child.waitForExit(timeout: 2) == 0, "\(child.stderr)")
        // In order: the controller and the broker outlived the gateway's shutdown.
        #expect(!child.stderr.contains("lost the controller"), "\(child.stderr)")
        #expect(!child.stderr.contains("MQTT connection"), "\(child.stderr)")
        // The helpers are gone with it: their ports are free again.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected != 0)
        address.sin_port = controllerPort.bigEndian
        let controllerConnected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(controllerConnected != 0)
    }

    @Test func logLevelHidesLowerLevels() throws {
        let path = try gatewayConfig()
        let result = try runBriefly(["run", "--config", path, "--hci", "tcp:127.0.0.1:9", "--log-level", "notice"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("NOTICE gattway: gattway running"))
        #expect(!result.stderr.contains("INFO"))
    }

    @Test func underTheJournalLinesCarryPrioritiesAndNoTimestamps() throws {
        let path = try gatewayConfig()
        let result = try runBriefly(["run", "--config", path, "--hci", "tcp:127.0.0.1:9"], journal: true)
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.contains("<5>gattway: gattway running device=gattway"))
        #expect(lines.contains("<6>gattway: mqtt off"))
        #expect(lines.allSatisfy { $0.hasPrefix("<") })
    }

    @Test(.disabled(if: integrationTestsStandAside, unitOnlyReason))
    func runTellsSystemdWhenReadyAndWhenStopping() async throws {
        let notify = try NotifySocket()
        func receive() async -> String? { await notify.next(within: .seconds(10)) }

        // READY=1 comes once the controller is up: the harness's virtual controller.
        let controller = try await VirtualController()
        defer { controller.stop() }
        let path = try gatewayConfig()
        let child = GattwayProcess(
            ["run", "--config", path, "--hci", "tcp:127.0.0.1:\(controller.tcpPort)"],
            environment: ["NOTIFY_SOCKET": notify.path])
        try child.start()
        defer { child.stop() }
        #expect(await receive() == "READY=1\nSTATUS=running")
        #expect(child.wait(timeout: 5) { _, stderr, _ in stderr.contains("NOTICE gattway: controller poweredOn") })
        child.signal(SIGTERM)
        #expect(await receive() == "STOPPING=1")
        // How long the stop takes is runStopsGracefullyOnSignalWithin2Seconds's matter.
        #expect(child.waitForExit(timeout: 10) == 0, "\(child.stderr)")
    }

    @Test func helpDescribesEverySubcommandAndOption() throws {
        let root = try GattwayProcess(["--help"]).runToCompletion()
        #expect(root.status == 0)
        for subcommand in ["run", "check", "lines", "demo", "config-reference", "bonds", "status", "reload"] {
            #expect(root.stdout.contains("  \(subcommand) "), "gattway --help lists \(subcommand)")
        }
        #expect(root.stdout.contains("--version"))
        let expectations: [(String, [String])] = [
            (
                "run",
                [
                    "--config <file>", "The YAML configuration file.", "--hci <transport>", "serial:DEVICE[,BAUD]",
                    "--mqtt <url>", "mqtts://HOST[:PORT]", "--log-level <level>", "trace, debug, info"
                ]
            ),
            ("check", ["--config <file>", "The YAML configuration file.", "Reports every problem at once"]),
            (
                "lines",
                [
                    "--config <file>", "simulated chips", "--backend <backend>", "libgpiod or simulated",
                    "--chip <chip>", "Only this chip"
                ]
            ),
            (
                "demo",
                [
                    "--config <file>", "The demo configuration file.", "--hci <transport>", "--mqtt <url>",
                    "--log-level <level>"
                ]
            ),
            ("config-reference", ["Markdown table"]),
            ("bonds", ["list", "remove", "clear", "state_dir", "mode 0600", "control socket"]),
            ("status", ["--config <file>", "--json", "runtime_dir", "MTU"]),
            ("reload", ["--config <file>", "SIGHUP", "not asked", "restart"]),
            ("pair", ["--config <file>", "--for <for>", "--close", "pairing_window", "LE Limited Discoverable"])
        ]
        for (subcommand, phrases) in expectations {
            let help = try GattwayProcess([subcommand, "--help"]).runToCompletion()
            #expect(help.status == 0)
            for phrase in phrases {
                #expect(help.stdout.contains(phrase), "gattway \(subcommand) --help mentions \(phrase)")
            }
        }
    }

    /// systemd's STATUS= names a lost MQTT broker, with why, and says `running` again once the
    /// mirror has reconnected.
    @Test(.disabled(if: integrationTestsStandAside, unitOnlyReason))
    func runTellsSystemdWhenTheBrokerIsLostAndBack() async throws {
        let notify = try NotifySocket()
        let controller = try await VirtualController()
        defer { controller.stop() }
        let broker = try Broker()
        defer { broker.stop() }
        let child = GattwayProcess(
            [
                "run", "--config", try gatewayConfig(), "--hci", "tcp:127.0.0.1:\(controller.tcpPort)",
                "--mqtt", "mqtt://127.0.0.1:\(broker.port)"
            ],
            environment: ["NOTIFY_SOCKET": notify.path])
        try child.start()
        defer { child.stop() }
        /// The next STATUS= that `matches`, skipping others, within 20 seconds.
        func status(_ matches: (String) -> Bool) async -> String? {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                guard let message = await notify.next(within: deadline - ContinuousClock.now) else { return nil }
                let status = message.split(separator: "\n").first { $0.hasPrefix("STATUS=") }.map { String($0.dropFirst(7)) }
                if let status, matches(status) { return status }
            }
            return nil
        }
        #expect(await status { $0 == "running" } != nil, "\(child.stderr)")
        #expect(child.wait(timeout: 10) { _, stderr, _ in stderr.contains("MQTT connected to 127.0.0.1:\(broker.port)") })

        broker.stop()
        let lost = await status { $0.contains("MQTT") }
        #expect(
            lost?.hasPrefix("running; degraded: MQTT: ") == true
                && (lost?.hasSuffix("; reconnecting") == true || lost?.hasSuffix("; retrying") == true),
            "\(lost ?? "no STATUS= about MQTT"): \(child.stderr)")
        try broker.start()
        #expect(await status { $0 == "running" } != nil, "running again once reconnected: \(child.stderr)")
    }

    /// Under systemd's watchdog (`WATCHDOG_USEC`) the running service sends WATCHDOG=1 every half
    /// period (that the beat stops with the event loop: ServiceWatchdogTests).
    @Test func runBeatsForSystemdsWatchdog() async throws {
        let notify = try NotifySocket()
        let path = try gatewayConfig()
        let child = GattwayProcess(
            ["run", "--config", path, "--hci", "tcp:127.0.0.1:9"],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"])
        try child.start()
        defer { child.stop() }
        var beats = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while beats < 3, ContinuousClock.now < deadline, let message = await notify.next(within: .seconds(2)) {
            if message == "WATCHDOG=1" { beats += 1 }
        }
        #expect(beats == 3, "three WATCHDOG=1 at 100 ms intervals:\n\(child.stderr)")
    }

    /// `check --print transport` prints `bluetooth.transport` as gattway reads it, whatever the
    /// YAML style, default included; an invalid file prints nothing and exits 1.
    @Test(arguments: [
        ("bluetooth: {transport: \"tcp:127.0.0.1:9000\"}  # flow style", "tcp:127.0.0.1:9000\n"),
        ("bluetooth:\n  advertising: {local_name: hci7}\n  transport: hci1", "hci1\n"),
        ("gpio: {backend: simulated}", "hci0\n")
    ])
    func checkPrintsTheTransport(_ yaml: String, _ expected: String) throws {
        let result = try GattwayProcess(["check", "--config", try temporaryFile(yaml), "--print", "transport"]).runToCompletion()
        #expect(result.status == 0)
        #expect(result.stdout == expected)
    }

    @Test func checkPrintsNothingForAnInvalidFile() throws {
        let result = try GattwayProcess([
            "check", "--config", try temporaryFile("bluetooth: {transport: hci1, nonsense: 1}"),
            "--print", "transport"
        ]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("bluetooth.nonsense"))
    }

    /// docs/configuration.md follows the CLI: every subcommand `gattway --help` lists has a row in
    /// its command table, and every option a subcommand's help names is documented there.
    @Test func theCommandLineDocsFollowTheHelp() throws {
        let docs = try String(contentsOfFile: Harness.packageRoot + "/docs/configuration.md", encoding: .utf8)
        let root = try GattwayProcess(["--help"]).runToCompletion()
        let subcommands = Self.subcommands(listedIn: root.stdout)
        #expect(subcommands.count >= 6, "parsed the subcommands of gattway --help: \(subcommands)")
        for subcommand in subcommands {
            #expect(docs.contains("| `\(subcommand)` |"), "docs/configuration.md has a row for \(subcommand)")
            let help = try GattwayProcess([subcommand, "--help"]).runToCompletion()
            let options = Set(
                help.stdout.split(whereSeparator: { !($0.isLetter || $0 == "-") })
                    .filter { $0.hasPrefix("--") && $0.count > 2 }.map(String.init))
            for option in options.subtracting(["--help", "--version"]) {
                #expect(docs.contains(option), "docs/configuration.md documents \(subcommand) \(option)")
            }
        }
    }

    /// The names under SUBCOMMANDS: in ArgumentParser's help, one per line, indented.
    static func subcommands(listedIn help: String) -> [String] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("SUBCOMMANDS:") }) else { return [] }
        return lines[(start + 1)...].prefix { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
            .compactMap { line in line.hasPrefix("  ") && !line.hasPrefix("    ") ? line.split(separator: " ").first.map(String.init) : nil
            }
    }

    @Test func linesListsSimulatedChipsWithTheirUsers() throws {
        let result = try GattwayProcess(["lines", "--config", "deploy/config/demo.yaml"]).runToCompletion()
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "gpiochip0 [gattway-sim0] 9 lines")
        #expect(
            lines.contains {
                $0.contains("GPIO17") && $0.contains("input") && $0.contains("used by \"gattway (door)\"")
                    && $0.contains("steps ×2 repeating")
            })
        #expect(lines.contains { $0.contains("GPIO23") && $0.contains("output") && $0.contains("gattway (level)") })
        #expect(lines.contains { $0.contains("GPIO26") && $0.contains("output") && $0.contains("gattway (relay)") })
    }

    @Test func linesWithAnUnknownChipExits1() throws {
        let result = try GattwayProcess(["lines", "--config", "deploy/config/demo.yaml", "--chip", "gpiochip9"]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stderr.contains("no chip \"gpiochip9\""))
    }

    @Test func configReferencePrintsTheTable() throws {
        let result = try GattwayProcess(["config-reference"]).runToCompletion()
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("| Key | Type | Default | Meaning |"))
        #expect(result.stdout.contains("| `bluetooth.advertising.interval` | duration 20ms-10.24s | 100ms |"))
    }

    // MARK: gattway bonds

    /// A configuration whose state directory is a fresh temporary one, holding two bonds, and
    /// whose runtime directory no gattway runs in: the commands work on the file.
    private func configWithBonds() throws -> (config: String, store: BondStore, keys: [String]) {
        let state = try temporaryDirectory("bonds").path
        let config = try temporaryFile(
            """
            state_dir: \(state)
            runtime_dir: \(state)/run
            services:
              - uuid: 181A
                characteristics:
                  - uuid: 2A6E
                    format: uint8
                    source: {static: 1}
            """)
        let store = BondStore(directory: state)
        let phoneKey = SecretKey(mostSignificantFirst: (0..<16).map { UInt8(0xA0 + $0) })
        let tabletKey = SecretKey(mostSignificantFirst: (0..<16).map { UInt8(0x30 + $0) })
        let irk = SecretKey(mostSignificantFirst: (0..<16).map { UInt8(0x50 + $0) })
        try store.save(
            BondRegistry([
                Bond(
                    identity: BluetoothAddress("C0:11:22:33:44:55", kind: .random)!,
                    longTermKey: LongTermKey(key: phoneKey, keySize: 16, authenticated: true, secureConnections: true),
                    peerIdentityResolvingKey: irk, clientConfigurations: [12: 1]),
                Bond(
                    identity: BluetoothAddress("00:1B:DC:00:00:01")!,
                    longTermKey: LongTermKey(key: tabletKey, keySize: 16, authenticated: false, secureConnections: true))
            ]))
        return (config, store, [phoneKey, tabletKey, irk].map { $0.bytes.map { String(format: "%02x", $0) }.joined() })
    }

    @Test func bondsListShowsAddressesAndStrengthButNeverKeys() throws {
        let (config, _, keys) = try configWithBonds()
        let result = try GattwayProcess(["bonds", "list", "--config", config]).runToCompletion()
        #expect(result.status == 0)
        #expect(
            result.stdout == """
                00:1B:DC:00:00:01 (public), keySize 16, unauthenticated, LE Secure Connections, 0 subscriptions
                C0:11:22:33:44:55 (random), keySize 16, authenticated, LE Secure Connections, IRK, 1 subscriptions

                """)
        for key in keys {
            #expect(!result.stdout.lowercased().contains(key) && !result.stderr.lowercased().contains(key))
        }
    }

    @Test func bondsRemoveForgetsOneAndFailsForAnUnknownAddress() throws {
        let (config, store, _) = try configWithBonds()
        let removed = try GattwayProcess(["bonds", "remove", "--config", config, "C0:11:22:33:44:55"]).runToCompletion()
        #expect(removed.status == 0)
        #expect(removed.stdout == "removed the bond of C0:11:22:33:44:55\n")
        #expect(try store.load().bonds.map(\.identity) == [BluetoothAddress("00:1B:DC:00:00:01")!])

        let unknown = try GattwayProcess(["bonds", "remove", "--config", config, "C0:11:22:33:44:55"]).runToCompletion()
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no bond for C0:11:22:33:44:55"))
        let invalid = try GattwayProcess(["bonds", "remove", "--config", config, "not-an-address"]).runToCompletion()
        #expect(invalid.status != 0)
        #expect(invalid.stderr.contains("not-an-address is not a Bluetooth address"))
    }

    @Test func bondsClearForgetsEveryBondAndKeepsTheFilePrivate() throws {
        let (config, store, _) = try configWithBonds()
        let result = try GattwayProcess(["bonds", "clear", "--config", config]).runToCompletion()
        #expect(result.status == 0)
        #expect(result.stdout == "removed 2 bonds\n")
        #expect(try store.load().bonds.isEmpty)
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(
            try GattwayProcess(["bonds", "list", "--config", config]).runToCompletion().stdout
                == "no bonded centrals in \(store.path)\n")
    }

    /// A gattway on the same state_dir whose control socket is elsewhere (another runtime_dir)
    /// would undo an edit of bonds.json: `bonds` refuses, naming it, as `status` and `reload` do
    /// rather than say it is not running; once it has stopped, `bonds` edits the file.
    @Test func aGattwayThatDoesNotAnswerIsNamedAndItsBondsLeftAlone() throws {
        let (config, store, _) = try configWithBonds()
        let state = (store.path as NSString).deletingLastPathComponent
        let elsewhere = try temporaryFile(
            try String(contentsOfFile: config, encoding: .utf8)
                .replacingOccurrences(of: "runtime_dir: \(state)/run", with: "runtime_dir: \(state)/elsewhere"),
            name: "elsewhere.yaml")
        let service = GattwayProcess(["run", "--config", elsewhere, "--hci", "tcp:127.0.0.1:9"])
        try service.start()
        defer { service.stop() }
        #expect(service.wait(timeout: 30) { _, stderr, exited in exited || stderr.contains("gattway running") })
        let before = try Data(contentsOf: URL(fileURLWithPath: store.path))

        let commands = [
            ["bonds", "remove", "--config", config, "C0:11:22:33:44:55"], ["bonds", "clear", "--config", config],
            ["bonds", "list", "--config", config], ["status", "--config", config], ["reload", "--config", config]
        ]
        for command in commands {
            let refused = try GattwayProcess(command).runToCompletion()
            #expect(refused.status == 1)
            #expect(
                refused.stderr
                    == "a gattway (pid \(service.pid)) runs on state_dir \(state) but nothing answers on "
                    + "\(state)/run/control.sock: its runtime_dir is another than this configuration's, or its log says "
                    + "why it has no control socket\n", "\(command): \(refused.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == before)

        service.signal(SIGTERM)
        #expect(service.waitForExit(timeout: 10) == 0)
        let cleared = try GattwayProcess(["bonds", "clear", "--config", config]).runToCompletion()
        #expect(cleared.stdout == "removed 2 bonds\n", "\(cleared.stderr)")
    }

    @Test func bondsOnAMalformedBondFileExits1NamingTheFile() throws {
        let (config, store, _) = try configWithBonds()
        try "{ not json".write(toFile: store.path, atomically: false, encoding: .utf8)
        let result = try GattwayProcess(["bonds", "list", "--config", config]).runToCompletion()
        #expect(result.status == 1)
        #expect(result.stderr.contains("bond file \(store.path) is malformed"))
    }
}
