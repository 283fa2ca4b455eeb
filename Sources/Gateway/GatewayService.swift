import BluetoothGATT
import Config
import Foundation
import GPIO
import Logging
import MQTT
import Sensors
import ServiceLifecycle

/// The running gateway: started by `gattway run` (and `gattway demo`) inside a `ServiceGroup`
/// that turns SIGTERM and SIGINT into a graceful shutdown.
///
/// It wires the layers: GPIO backend → one `SensorRunner` per sensor → `ValuePipeline` (GATT
/// values, notifications) → `MQTTMirrorService` when the configuration has an `mqtt` section.
public struct GatewayService: Service {
    private let config: GatewayConfig
    private let logger: Logger
    private let systemd: SystemdNotifier
    private let statisticsInterval: Duration

    public init(config: GatewayConfig, logger: Logger, systemd: SystemdNotifier,
                statisticsInterval: Duration = .seconds(60)) {
        self.config = config
        self.logger = logger
        self.systemd = systemd
        self.statisticsInterval = statisticsInterval
    }

    public func run() async throws {
        for line in ConfigSummary.lines(config) {
            logger.info("\(line)")
        }
        let backend = GPIOBackendSelection.make(config.gpio)
        let runners = try config.sensors.map { sensor in
            do {
                return try SensorRunner(spec: SensorMapping.spec(sensor, gpio: config.gpio,
                                                                 stateDirectory: config.stateDirectory),
                                        backend: backend)
            } catch {
                throw GatewayError.sensor(sensor.id, "\(error)")
            }
        }
        let runnersByName = Dictionary(uniqueKeysWithValues: runners.map { ($0.name, $0) })
        let layout = GATTLayout(config: config)
        let peripheral = Peripheral(configuration: layout.serverConfiguration, link: UnattachedLink())
        let pipeline = ValuePipeline(layout: layout, peripheral: peripheral, logger: logger,
                                     driveOutput: { sensor, level in
                                         guard let runner = runnersByName[sensor] else { return }
                                         try await runner.write(level)
                                     })
        let mirror = try config.mqtt.map { mqtt in
            try MirrorRunner(config: config, mqtt: mqtt, layout: layout, pipeline: pipeline, logger: logger)
        }
        logger.warning("""
            this build has no BLE host yet: no controller is opened and no central can connect; \
            sensor values are served to MQTT
            """)
        logger.notice("gattway running", metadata: ["device": "\(config.device.id)"])
        systemd.ready(status: "running")

        await withTaskGroup(of: Void.self) { group in
            for runner in runners {
                group.addTask {
                    do {
                        try await runner.run()
                    } catch {
                        logger.error("sensor stopped", metadata: ["sensor": "\(runner.name)", "error": "\(error)"])
                    }
                }
                group.addTask {
                    for await value in runner.values { await pipeline.sensorValue(value) }
                }
            }
            group.addTask { await pipeline.run(statisticsInterval: statisticsInterval) }
            if let mirror {
                group.addTask { await mirror.run() }
            }
            // Suspends until the group starts a graceful shutdown (SIGTERM/SIGINT); a plain
            // cancellation ends the wait the same way.
            try? await gracefulShutdown()
            systemd.stopping()
            logger.notice("gattway stopping")
            // Order: (no advertising or centrals without a host yet) publish offline and flush
            // MQTT, then stop sensors and the pipeline.
            await mirror?.stop()
            await pipeline.finish()
            group.cancelAll()
        }
        logger.notice("gattway stopped")
    }

    /// Runs the gateway (and `companions`, such as the demo's MQTT view) until SIGTERM or SIGINT,
    /// then returns.
    public static func runUntilSignalled(config: GatewayConfig, logger: Logger, systemd: SystemdNotifier,
                                         companions: [any Service] = []) async throws {
        let services = [GatewayService(config: config, logger: logger, systemd: systemd)] + companions
        let group = ServiceGroup(configuration: .init(
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
        case let .sensor(id, reason): "sensor \(id): \(reason)"
        }
    }
}

/// The peripheral's link while no BLE host drives it: the peripheral stays `unknown` (no
/// controller), so nothing is ever sent through it.
struct UnattachedLink: PeripheralLink {
    func send(_ pdu: [UInt8], to central: CentralID) {}
    func disconnectAfterTransactionTimeout(_ central: CentralID) {}
    func requestConnectionLatency(_ latency: ConnectionLatency, for central: CentralID) {}
}
