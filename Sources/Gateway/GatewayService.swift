import BluetoothGATT
import BluetoothHost
import BluetoothSMP
import Config
import EventLoop
import FoundationEssentials
import GPIO
import Glibc
import Logging
import MQTTService
import Sensors
import ServiceLifecycle
import StateFile
import Synchronization
import UnixSignals

/// The running gateway: started by `gattway run` (and `gattway demo`) inside a `ServiceGroup`
/// that turns SIGTERM and SIGINT into a graceful shutdown. SIGHUP, like `gattway reload`, reads
/// the configuration file again (`RunningConfiguration.reload`).
///
/// It wires the layers: GPIO backend → one `SensorRunner` per sensor → its `SensorForwarder` →
/// `ValuePipeline` (GATT values, notifications) → `MQTTMirrorService` when the configuration has
/// an `mqtt` section; readings of sensors with `bthome: true` also go to the `BTHomeAdvertiser`
/// (encrypted with `bluetooth.bthome.key_file`'s key, its counter in `state_dir`).
public struct GatewayService: Service {
    private let config: GatewayConfig
    /// Reads the configuration file again for a reload; nil for `gattway demo`, which does not reload.
    private let reloadConfig: (@Sendable () throws(ConfigError) -> LoadedConfig)?
    private let logger: Logger
    private let systemd: SystemdNotifier
    private let statisticsInterval: Duration
    private let readinessGrace: Duration
    /// systemd's watchdog period halved (`ServiceWatchdog`), when systemd asked for keep-alives.
    private let watchdogInterval: Duration?

    /// `readinessGrace`: how long READY=1 waits for the controller before the gateway reports
    /// itself ready without it (degraded; see `ServiceReadiness`). `watchdogInterval`: how often
    /// to send WATCHDOG=1 (nil: systemd asked for none).
    public init(
        config: GatewayConfig, reloadConfig: (@Sendable () throws(ConfigError) -> LoadedConfig)? = nil,
        logger: Logger, systemd: SystemdNotifier,
        statisticsInterval: Duration = .seconds(60), readinessGrace: Duration = .seconds(10),
        watchdogInterval: Duration? = ServiceWatchdog.interval(environment: ProcessInfo.processInfo.environment)
    ) {
        self.config = config
        self.reloadConfig = reloadConfig
        self.logger = logger
        self.systemd = systemd
        self.statisticsInterval = statisticsInterval
        self.readinessGrace = readinessGrace
        self.watchdogInterval = watchdogInterval
    }

    /// Runs on the event loop: the sensors' readings, the pipeline, the host and the tasks between
    /// them share its thread, so a value goes from a GPIO edge to the controller in one wake-up.
    public func run() async throws {
        try await withTaskExecutorPreference(EventLoop.shared) { try await runOnLoop() }
    }

    private func runOnLoop() async throws {
        // Before anything reads or writes the state directory: a second gattway there stops here.
        let stateLock = try StateDirectoryLock(directory: config.stateDirectory)
        defer { withExtendedLifetime(stateLock) {} }
        for line in ConfigSummary.lines(config) {
            logger.info("\(line)")
        }
        // Trapped before anything can take a while: SIGHUP's default action ends the process.
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // The one thread that writes the state directory's files for this run, off the loop.
        let stateWriter = StateFileWriter()
        let hostConfiguration = try HostMapping.configuration(config)
        let readiness = ReadinessReporter(systemd: systemd, controller: "\(hostConfiguration.transport)")
        let running = try RunningConfiguration(
            config: config, load: reloadConfig, backend: GPIOBackendSelection.make(config.gpio),
            stateWriter: stateWriter, readiness: readiness, logger: logger)
        let layout = GATTLayout(config: config)
        let binding = GATTPeripheralBinding(configuration: layout.serverConfiguration)
        let host = PeripheralHost(
            configuration: hostConfiguration, peripheral: binding, stateWriter: stateWriter, logger: logger)
        let bthome = try BTHomeBroadcast(config: config).map { broadcast in
            BTHomeAdvertiser(
                broadcast: broadcast, base: hostConfiguration.advertising ?? AdvertisingSettings(),
                counter: try broadcast.key.map { _ in try BTHomeCounter.load(stateDirectory: config.stateDirectory) },
                stateWriter: stateWriter, logger: logger, address: { await host.controller?.address },
                publish: { try await host.updateAdvertisingData($0) })
        }
        let pipeline = ValuePipeline(
            layout: layout, peripheral: binding.peripheral,
            triggerFile: TriggerFile(stateDirectory: config.stateDirectory, writer: stateWriter),
            logger: logger,
            driveOutput: { sensor, level in
                guard let runner = await running.runner(sensor) else { return }
                try await runner.write(level)
            })
        let mirror = config.mqtt.map { mqtt in
            MirrorRunner(
                config: config, mqtt: mqtt, layout: layout, pipeline: pipeline,
                peripheral: binding.peripheral, host: host,
                address: { id in
                    binding.address(of: id).map { "\($0)" } ?? "handle-\(String(id.rawValue, radix: 16))"
                }, stateWriter: stateWriter, logger: logger, connectionChanged: { readiness.mqttChanged(down: $0) })
        }
        logger.notice("gattway running", metadata: ["device": "\(config.device.id)"])
        let control = GatewayControl(
            running: running, host: host, peripheral: binding.peripheral, pipeline: pipeline, mirror: mirror)
        let controlSocket = Self.openControlSocket(config.runtimeDirectory, control: control, logger: logger)
        controlSocket?.start()

        // Before the host runs, so its first events (the controller's state) find the sinks.
        await mirror?.attach()
        await pipeline.attach()
        await host.setEventSink(
            Self.hostEventSink(
                host: host, pipeline: pipeline, mirror: mirror, confirmWith: config.bluetooth.security.confirmWith,
                readiness: readiness, logger: logger))
        // The host runs beside the group: its shutdown wait is bounded below, so a controller caught
        // mid-command cannot hold the exit.
        let hostTask = Task(executorPreference: EventLoop.shared) { await host.run() }
        let watchdog = watchdogInterval.map { ServiceWatchdog(interval: $0, systemd: systemd) }
        watchdog?.start()
        if config.bluetooth.security.pairing == .open {
            logger.warning("pairing is open at all times (bluetooth.security.pairing: open): anyone in radio range can pair")
            await pipeline.pairingWindowChanged(true)
        }
        await running.launch(
            into: RunningConfiguration.Sinks(pipeline: pipeline, bthome: bthome, host: host, mirror: mirror))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await pipeline.run(statisticsInterval: statisticsInterval) }
            group.addTask {
                for await _ in hangups {
                    logger.notice("SIGHUP: reloading the configuration")
                    _ = await running.reload()
                }
            }
            group.addTask { [readinessGrace] in await readiness.expireGrace(after: readinessGrace) }
            // Suspends until the group starts a graceful shutdown (SIGTERM/SIGINT); a plain
            // cancellation ends the wait the same way.
            try? await gracefulShutdown()
            systemd.stopping()
            watchdog?.stop()
            logger.notice("gattway stopping")
            // Centrals first (no new ones, then a clean disconnect for each), then MQTT says
            // offline and flushes, then the controller closes and the sensors release their lines.
            // A controller that stops answering must not hold the exit: at most 1 s for this step.
            await Self.awaitAtMost(.seconds(1)) {
                try? await host.stopAdvertising()
                for central in await host.connectedCentrals {
                    try? await host.disconnect(central)
                }
            }
            await controlSocket?.stop()
            await mirror?.stop()
            await pipeline.finish()
            await bthome?.finish()
            await running.stopAll()
            hostTask.cancel()
            await Self.awaitAtMost(.milliseconds(500)) { await hostTask.value }
            group.cancelAll()
        }
        // The state files handed to the writer last (a bond, a counter's total, trigger settings)
        // are on disk.
        await stateWriter.idle()
        logger.notice("gattway stopped")
    }

    /// Waits for `work` until it ends or `limit` passes, whichever comes first; work still
    /// running then goes on unobserved.
    static func awaitAtMost(_ limit: Duration, _ work: @escaping @Sendable () async -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resume = ResumeOnce(continuation)
            Task {
                await work()
                resume()
            }
            Task {
                try? await Task.sleep(for: limit)
                resume()
            }
        }
    }

    /// The control socket in `runtimeDirectory`, or nil (logged) when it cannot be made: the
    /// gateway runs without it, and `gattway status`/`bonds` say nothing answers.
    private static func openControlSocket(_ runtimeDirectory: String, control: GatewayControl, logger: Logger) -> ControlSocket? {
        do {
            let socket = try ControlSocket(runtimeDirectory: runtimeDirectory, handler: control.answer)
            logger.info("control socket \(socket.path)")
            return socket
        } catch {
            logger.warning("\(error); running without a control socket")
            return nil
        }
    }

    /// The sink of the host's events (`PeripheralHost.setEventSink`), run on the loop in the call
    /// that reported each: logs them, tells the pipeline (for MQTT's `state`) when advertising
    /// starts and stops and the pairing window opens and closes (which the advertising flags say
    /// too), publishes a pairing's random passkey or Numeric Comparison number on MQTT, and tells
    /// systemd how the controller is doing (`ServiceReadiness`: READY=1 at the first power-on,
    /// when the services are published; the number of connected centrals in STATUS=).
    static func hostEventSink(
        host: PeripheralHost, pipeline: ValuePipeline, mirror: MirrorRunner?, confirmWith: String?,
        readiness: ReadinessReporter, logger: Logger
    ) -> HostEventSink {
        // The advertising flags follow the pairing window by HCI commands, which are awaited off
        // the event path: a job per change of the window (not per packet), each after the one
        // before, so the flags end as the window does even when it opens and closes at once.
        let windowFlags = LoopBound(SerialTasks())
        return { event in
            switch event {
            case .stateChanged(let state):
                logger.notice("controller \(state.rawValue)")
                readiness.controllerStateChanged(state)
            case .connected(let central):
                logger.info("central connected", metadata: ["central": "\(central)"])
                readiness.centralsChanged(host.onLoop { $0.connectedCentrals.count })
            case .disconnected(let central, let reason):
                logger.info("central disconnected", metadata: ["central": "\(central)", "reason": "\(reason)"])
                readiness.centralsChanged(host.onLoop { $0.connectedCentrals.count })
            case .advertisingStarted:
                logger.info("advertising")
                pipeline.onLoop { $0.advertisingChanged(true) }
            case .advertisingStopped:
                logger.info("advertising stopped")
                pipeline.onLoop { $0.advertisingChanged(false) }
            case .passkeyDisplayed(let central, let passkey?):
                // The host logged it already (notice); a fixed passkey (nil) is never published.
                mirror?.onLoop(with: ("\(central.address)", SecurityEvent.sixDigits(passkey))) {
                    $0.pairing(central: $1.0, prompt: .passkey($1.1))
                }
            case .pairingWindowChanged(let open):
                // The host logged it; the advertising flags and MQTT's state follow.
                windowFlags.value.enqueue {
                    do {
                        try await host.advertisePairingWindow(open)
                    } catch {
                        logger.warning("advertising the pairing window: \(error)")
                    }
                }
                pipeline.onLoop(with: open) { $0.pairingWindowChanged($1) }
            case .numericComparison(let central, let number):
                // The host logged the number; the press reaches the host from the sensor's values.
                let shown = SecurityEvent.sixDigits(number)
                logger.notice("if \(central.address) shows \(shown), press \"\(confirmWith ?? "")\" to pair")
                mirror?.onLoop(with: ("\(central.address)", shown)) { $0.pairing(central: $1.0, prompt: .compare($1.1)) }
            default:
                logger.debug("host event", metadata: ["event": "\(event)"])
            }
        }
    }

    /// Runs the gateway (and `companions`, such as the demo's MQTT view) until SIGTERM or SIGINT,
    /// then returns; SIGHUP reloads the configuration with `reloadConfig`.
    public static func runUntilSignalled(
        config: GatewayConfig, reloadConfig: (@Sendable () throws(ConfigError) -> LoadedConfig)? = nil,
        logger: Logger, systemd: SystemdNotifier, companions: [any Service] = []
    ) async throws {
        let services =
            [GatewayService(config: config, reloadConfig: reloadConfig, logger: logger, systemd: systemd)] + companions
        let group = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        try await group.run()
    }
}

public enum GatewayError: Error, CustomStringConvertible {
    case sensor(String, String)

    public var description: String {
        switch self {
        case .sensor(let id, let reason): "sensor \(id): \(reason)"
        }
    }
}

/// Resumes a continuation the first time it is called, and ignores later calls.
private final class ResumeOnce: @unchecked Sendable {
    private let lock = Mutex(())
    private var continuation: CheckedContinuation<Void, Never>?

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func callAsFunction() {
        let pending = lock.withLock { _ in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume()
    }
}
