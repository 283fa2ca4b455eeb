import BluetoothGATT
import Config
import FoundationEssentials
import Logging
import MQTT

/// Runs the MQTT mirror for the gateway: pipeline events in, `/set` and source payloads out
/// through `MirrorBridge`, and the `state` topic (peripheral state, counters) refreshed with
/// every change of centrals and every statistics interval.
final class MirrorRunner: Sendable {
    let service: MQTTMirrorService
    let bridge: MirrorBridge
    let pipeline: ValuePipeline

    init(
        config: GatewayConfig, mqtt: MQTTConfig, layout: GATTLayout, pipeline: ValuePipeline,
        address: @escaping @Sendable (CentralID) -> String, logger: Logger
    ) throws {
        let bridge = MirrorBridge(layout: layout, address: address)
        self.bridge = bridge
        self.pipeline = pipeline
        service = try MQTTMirrorService(
            client: MirrorMapping.clientConfiguration(mqtt),
            mirror: MirrorMapping.mirrorConfiguration(config, mqtt: mqtt, layout: layout),
            stateDirectory: URL(fileURLWithPath: config.stateDirectory), outboxCapacity: mqtt.outboxLimit,
            logger: logger,
            onSet: { id, payload in await bridge.set(id, payload: payload, pipeline: pipeline) },
            onSourceValue: { ids, payload in
                await bridge.sourceValue(ids, payload: payload, pipeline: pipeline, logger: logger)
            })
    }

    func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.service.run() }
            for stream in [self.pipeline.durableEvents, self.pipeline.events] {
                group.addTask {
                    for await event in stream {
                        await self.service.handle(self.bridge.mirrorEvent(event, at: Date()))
                    }
                }
            }
        }
    }

    /// Publishes what a pairing asks of the user (`<base>/<dev>/pairing`).
    func pairing(central: String, prompt: MirrorPairingPrompt) async {
        await service.handle(.pairing(central: central, prompt: prompt, at: Date()))
    }

    func stop() async {
        await service.stop()
    }
}
