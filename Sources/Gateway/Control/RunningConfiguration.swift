import BluetoothHost
import Config
import EventLoop
import GPIO
import Logging
import Sensors
import StateFile

/// The configuration the gateway runs now, and the sensors it runs from it: what a reload
/// (`gattway reload`, SIGHUP) reads the file again for and changes.
///
/// A reload validates the whole file first: an invalid one changes nothing and every error is
/// logged. A valid one is compared with the running configuration (`ConfigChanges`): sensors
/// added, removed or changed are started, stopped or restarted (their lines released before they
/// are requested again; a changed sensor whose new form cannot start runs again as before); changed services are published anew (`ValuePipeline.changeLayout`) and
/// changed notify policies (the services otherwise the same) go to the pipeline; a changed `mqtt`
/// section, or services that change what the mirror publishes, replace the MQTT mirror
/// (`MirrorRunner.replace`). Every other section that changed is reported as needing a restart
/// and keeps running as it was, so `config` is what runs: the file's where applied.
actor RunningConfiguration {
    nonisolated var unownedExecutor: UnownedSerialExecutor { EventLoop.shared.asUnownedSerialExecutor() }

    /// Where each reading of a sensor goes (`SensorForwarder`).
    struct Sinks: Sendable {
        let pipeline: ValuePipeline
        let bthome: BTHomeAdvertiser?
        let host: PeripheralHost
        /// Not a sink of readings: the MQTT mirror a reload replaces.
        let mirror: MirrorRunner?
    }

    private struct RunningSensor {
        let runner: SensorRunner
        /// Set once the sensors are launched; ends (and has released the lines) when cancelled.
        var task: Task<Void, Never>?
    }

    private(set) var config: GatewayConfig
    /// Reads and validates the configuration file again, with the command line's overrides
    /// applied; nil for `gattway demo`, which does not reload.
    private let load: (@Sendable () throws(ConfigError) -> LoadedConfig)?
    private let backend: any GPIOBackend
    /// Writes the sensors' state files (counter totals).
    private let stateWriter: StateFileWriter
    private let logger: Logger
    /// Tells systemd when a reload begins and ends.
    private let readiness: ReadinessReporter
    private var sensors: [String: RunningSensor] = [:]
    private var sinks: Sinks?
    /// The reload under way: a reload awaits the one before it, since each suspends while
    /// sensors stop and would otherwise compare against a configuration the other is changing.
    private var latestReload: Task<ReloadReport, Never>?

    /// Requests every sensor's lines, so a missing or busy line fails the start here.
    init(
        config: GatewayConfig, load: (@Sendable () throws(ConfigError) -> LoadedConfig)?,
        backend: any GPIOBackend, stateWriter: StateFileWriter, readiness: ReadinessReporter, logger: Logger
    ) throws(GatewayError) {
        self.config = config
        self.load = load
        self.backend = backend
        self.stateWriter = stateWriter
        self.readiness = readiness
        self.logger = logger
        for sensor in config.sensors {
            do {
                sensors[sensor.id] = RunningSensor(
                    runner: try Self.runner(sensor, config: config, backend: backend, stateWriter: stateWriter))
            } catch {
                throw GatewayError.sensor(sensor.id, "\(error)")
            }
        }
    }

    /// The runner of sensor `id`, while it runs.
    func runner(_ id: String) -> SensorRunner? { sensors[id]?.runner }

    /// Starts reading every sensor into `sinks`.
    func launch(into sinks: Sinks) {
        self.sinks = sinks
        for id in sensors.keys { launch(id) }
    }

    /// Stops every sensor and waits until their lines are released.
    func stopAll() async {
        sinks = nil
        for id in Array(sensors.keys) { await stop(id) }
    }

    /// Reads the configuration file again and applies what changed; the report says what was
    /// applied, what waits for a restart, or, for an invalid file, every error. Each line of it
    /// is logged.
    func reload() async -> ReloadReport {
        let previous = latestReload
        let reload = Task { [readiness] in
            _ = await previous?.value
            readiness.reloadStarted()
            let report = await reloadUnlogged()
            readiness.reloadFinished()
            return report
        }
        latestReload = reload
        let report = await reload.value
        for line in report.lines {
            if report.rejected { logger.error("\(line)") } else { logger.notice("\(line)") }
        }
        return report
    }

    private func reloadUnlogged() async -> ReloadReport {
        guard let load else {
            return ReloadReport(errors: ["gattway demo does not reload its configuration: stop it and start it again"])
        }
        let loaded: LoadedConfig
        do {
            loaded = try load()
        } catch {
            return ReloadReport(errors: error.description.split(separator: "\n").map(String.init))
        }
        for warning in loaded.warnings {
            logger.warning("configuration: \(warning)")
        }
        let changes = ConfigChanges.between(config, loaded.config)
        var report = ReloadReport()
        for id in changes.sensorsRemoved + changes.sensorsChanged {
            await stop(id)
        }
        for id in changes.sensorsRemoved {
            report.applied.append("sensor \(id) stopped")
        }
        var running = config
        // Reported after the sensors, though applied before those that start: they start on the
        // new layout, and their first readings reach its characteristics.
        var servicesReport: String?
        // The MQTT mirror follows the services when the file keeps an mqtt section; adding or
        // removing one waits for a restart, and so do the services with a mirror that stays.
        let mirrorFollows = sinks?.mirror != nil && loaded.config.mqtt != nil
        if changes.sections.contains("services"), config.mqtt == nil || mirrorFollows, let pipeline = sinks?.pipeline {
            var next = config
            next.services = loaded.config.services
            next.sensors = loaded.config.sensors
            // The sensors that keep running give the new characteristics their values now; the
            // others give theirs when they start, below.
            var readings: [SensorSample] = []
            for sensor in sensors.values { readings += await sensor.runner.latest().values }
            do {
                let change = try await pipeline.changeLayout(to: GATTLayout(config: next), currentReadings: readings)
                running.services = next.services
                servicesReport = Self.describe(change)
            } catch {
                report.failed.append("services could not be published anew (\(error)); the next reload tries again")
            }
        }
        running.sensors = []
        let restarted = Set(changes.sensorsChanged)
        let broadcasting = Set(config.sensors.filter(\.bthome).map(\.id))
        for var sensor in loaded.config.sensors {
            // The broadcast keeps its sensors until a restart (`sensors[].bthome`), so the running
            // configuration keeps its flags and the next reload still reports the difference.
            sensor.bthome = broadcasting.contains(sensor.id)
            if changes.sensorsAdded.contains(sensor.id) || restarted.contains(sensor.id) {
                do {
                    sensors[sensor.id] = RunningSensor(
                        runner: try Self.runner(sensor, config: running, backend: backend, stateWriter: stateWriter))
                } catch {
                    // A changed sensor runs as before (its lines were let go so the new one could
                    // take them; a line the new one names may be missing, which `check` cannot
                    // see); either way the running configuration keeps the sensor as it runs, so
                    // the next reload tries the new one again.
                    guard restarted.contains(sensor.id), let before = config.sensor(id: sensor.id) else {
                        report.failed.append("sensor \(sensor.id) could not start: \(error)")
                        continue
                    }
                    do {
                        sensors[sensor.id] = RunningSensor(
                            runner: try Self.runner(before, config: config, backend: backend, stateWriter: stateWriter))
                    } catch let restore {
                        report.failed.append(
                            "sensor \(sensor.id) could not start: \(error); nor as before (\(restore)): it is stopped until a reload starts it"
                        )
                        continue
                    }
                    launch(sensor.id)
                    report.failed.append("sensor \(sensor.id) could not start: \(error); it runs as before")
                    running.sensors.append(before)
                    continue
                }
                launch(sensor.id)
                report.applied.append("sensor \(sensor.id) \(restarted.contains(sensor.id) ? "restarted" : "started")")
            }
            running.sensors.append(sensor)
        }
        report.applied += servicesReport.map { [$0] } ?? []
        if !changes.notifyPolicies.isEmpty, let pipeline = sinks?.pipeline {
            await pipeline.changeNotifyPolicies(loaded.config.services)
            running.services = loaded.config.services
            report.applied += changes.notifyPolicies.map { "notify policy of \($0)" }
        }
        // The mirror's settings, or its topics, discovery and heartbeats (the notify policies'
        // max_interval) after the services changed.
        if let mirror = sinks?.mirror, let pipeline = sinks?.pipeline, let before = config.mqtt,
            let mqtt = loaded.config.mqtt
        {
            var next = running
            next.mqtt = mqtt
            let layout = await pipeline.layout
            let wasOff = await mirror.isOff
            if wasOff || mqtt != before
                || MirrorMapping.mirrorConfiguration(next, mqtt: mqtt, layout: layout)
                    != MirrorMapping.mirrorConfiguration(config, mqtt: before, layout: GATTLayout(config: config))
            {
                do {
                    try await mirror.replace(config: next, mqtt: mqtt, layout: layout)
                    running.mqtt = mqtt
                    report.applied.append(
                        wasOff
                            ? "mqtt: the mirror started"
                            : mqtt != before
                                ? "mqtt: the mirror reconnected with the new settings"
                                : "mqtt: the mirror reconnected for the new services (topics, discovery, heartbeats)")
                } catch let failure as MirrorRestartFailure {
                    report.failed.append("mqtt: \(failure): the mirror is off until a reload starts it")
                } catch {
                    report.failed.append("mqtt: the new settings did not start (\(error)); the mirror runs with those before")
                }
            }
        }
        config = running
        let appliedSections = ["services": running.services == loaded.config.services, "mqtt": running.mqtt == loaded.config.mqtt]
        report.needsRestart = changes.sections.filter { appliedSections[$0] != true }
            .map { "\($0) changed: restart gattway to apply it" }
        return report
    }

    /// The report's line for a changed GATT layout.
    private static func describe(_ change: GATTLayoutChange) -> String {
        "services: \(change.added.count) published anew, \(change.removed.count) removed, "
            + "\(change.kept.count) unchanged (Service Changed indicated)"
    }

    private static func runner(
        _ sensor: SensorConfig, config: GatewayConfig, backend: any GPIOBackend, stateWriter: StateFileWriter
    ) throws -> SensorRunner {
        try SensorRunner(
            spec: SensorMapping.spec(sensor, gpio: config.gpio, stateDirectory: config.stateDirectory),
            backend: backend, stateWriter: stateWriter)
    }

    private func launch(_ id: String) {
        guard let sinks, let runner = sensors[id]?.runner else { return }
        let forwarder = SensorForwarder(
            sensor: id, pipeline: sinks.pipeline, bthome: sinks.bthome, host: sinks.host,
            confirms: id == config.bluetooth.security.confirmWith,
            pairButton: id == config.bluetooth.security.pairWith ? PairButton(hold: config.bluetooth.security.pairPress) : nil,
            pairingWindow: config.bluetooth.security.pairingWindow, logger: logger)
        let logger = logger
        sensors[id]?.task = Task(executorPreference: EventLoop.shared) {
            do {
                try await runner.run(delivering: forwarder.deliver)
            } catch {
                logger.error("sensor stopped", metadata: ["sensor": "\(id)", "error": "\(error)"])
            }
        }
    }

    /// Stops sensor `id` and forgets whether it was available: a sensor started again under
    /// the name judges its readings afresh.
    private func stop(_ id: String) async {
        guard let sensor = sensors.removeValue(forKey: id) else { return }
        sensor.task?.cancel()
        await sensor.task?.value
        await sinks?.pipeline.sensorAvailability(sensor: id, unavailable: nil)
    }
}
