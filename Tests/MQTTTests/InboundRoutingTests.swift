import Synchronization
import TestHarness
import Testing

@testable import MQTTMirror
@testable import MQTTService

/// `InboundRouting`: each kind of inbound message reaches the gateway's handler or becomes what
/// the service publishes next.
@Suite struct InboundRoutingTests {
    let label = MirrorCharacteristicID(service: "gateway", characteristic: "label")
    let sets = Recorded<String>()
    let sources = Recorded<String>()

    func routing(answer: MirrorSetResult = .accepted, birthDelay: Duration = .seconds(3)) -> InboundRouting {
        InboundRouting(
            onSet: { [sets] id, payload in
                sets.append("\(id)=\(String(decoding: payload, as: UTF8.self))")
                return answer
            },
            onSourceValue: { [sources] ids, payload in
                sources.append("\(ids)=\(String(decoding: payload, as: UTF8.self))")
            },
            birthDelay: { birthDelay }, logger: testLogger)
    }

    @Test func anAcceptedSetPublishesNothingAndARejectedOneItsReason() async {
        #expect(routing().route(.set(label, payload: Array("\"hi\"".utf8))) == nil, "the gateway decides")
        #expect(sets.all.isEmpty)
        #expect(await routing().ask(.set(label, payload: Array("\"hi\"".utf8))) == .nothing)
        #expect(sets.all == ["gateway/label=\"hi\""])
        let rejecting = routing(answer: .rejected(reason: "too long"))
        #expect(await rejecting.ask(.set(label, payload: Array("x".utf8))) == .reject(label, reason: "too long"))
    }

    @Test func aSourcePayloadReachesEveryCharacteristicOfItsTopic() async {
        let other = MirrorCharacteristicID(service: "gateway", characteristic: "copy")
        #expect(routing().route(.sourceValue([label, other], payload: Array("1".utf8))) == nil, "the gateway decides")
        #expect(await routing().ask(.sourceValue([label, other], payload: Array("1".utf8))) == .nothing)
        #expect(sources.all == ["[gateway/label, gateway/copy]=1"])
        #expect(sets.all.isEmpty)
    }

    @Test func homeAssistantsBirthRepublishesDiscoveryAfterTheDelay() {
        #expect(
            routing(birthDelay: .milliseconds(1234)).route(.homeAssistantOnline) == .republishDiscovery(after: .milliseconds(1234)))
    }

    @Test func whatAnEarlierRunLeftRetainedIsClearedOrCorrected() {
        #expect(
            routing().route(.stalePerEntityDiscovery("homeassistant/sensor/gattway_dev/t/config"))
                == .publish(MQTTMessage(topic: "homeassistant/sensor/gattway_dev/t/config", payload: [], retain: true)))
        let correction = MQTTMessage(topic: "gattway/dev/centrals/AA", payload: [], retain: true)
        #expect(routing().route(.staleRetained(correction)) == .publish(correction))
        #expect(routing().route(.ignored) == .nothing)
        #expect(sets.all.isEmpty && sources.all.isEmpty)
    }
}

/// What a handler a stage calls was given, in order.
final class Recorded<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])
    func append(_ element: Element) { elements.withLock { $0.append(element) } }
    var all: [Element] { elements.withLock { $0 } }
}
