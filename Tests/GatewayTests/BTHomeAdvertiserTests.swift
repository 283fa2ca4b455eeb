import BluetoothCore
import BluetoothHost
import Config
import Foundation
import Gateway
import Logging
import StateFile
import Synchronization
import TestHarness
import Testing
import Values

/// When the BTHome advertising data is refreshed: each packet has something the last one did not.
struct BTHomeAdvertiserTests {
    static let key = "231d39c1d7cc1ab1aee224cd096db932"
    static let address = BluetoothAddress("C0:00:00:00:00:01")!

    /// Holds the advertiser's question for the controller's address until `open`, and says when
    /// it has been asked.
    final class AddressGate: Sendable {
        private let state = Mutex<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
        let asked: AsyncStream<Void>
        private let askedContinuation: AsyncStream<Void>.Continuation

        init() { (asked, askedContinuation) = AsyncStream.makeStream() }

        func address() async -> BluetoothAddress? {
            askedContinuation.yield()
            await withCheckedContinuation { continuation in
                let isOpen = state.withLock { state in
                    if !state.open { state.waiting.append(continuation) }
                    return state.open
                }
                if isOpen { continuation.resume() }
            }
            return BTHomeAdvertiserTests.address
        }

        func open() {
            let waiting = state.withLock { state in
                state.open = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// A reading that arrives while a refresh waits for the controller's address goes out in that
    /// refresh's packet; no second packet with nothing new follows a `minimumInterval` later.
    @Test func aReadingDuringARefreshGoesOutInItAndNoEmptyRepeatFollows() async throws {
        let directory = try temporaryDirectory("bthome-advertiser")
        let keyFile = directory.appendingPathComponent("bthome.key").path
        try (Self.key + "\n").write(toFile: keyFile, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
        let config = try ConfigLoader.load(
            yaml: """
                bluetooth:
                  bthome: {key_file: \(keyFile)}
                gpio:
                  backend: simulated
                  chips: [{lines: [{name: DOOR}, {name: PULSES}]}]
                sensors:
                  - {id: door, kind: binary, line: DOOR, bthome: true}
                  - {id: pulses, kind: counter, line: PULSES, bthome: true}
                """
        ).config
        let broadcast = try #require(BTHomeBroadcast(config: config))
        let base = try #require(HostMapping.configuration(config).advertising)
        let gate = AddressGate()
        let published = Mutex<[AdvertisingSettings]>([])
        let advertiser = BTHomeAdvertiser(
            broadcast: broadcast, base: base,
            counter: try BTHomeCounter.load(stateDirectory: directory.path), stateWriter: StateFileWriter(),
            logger: Logger(label: "test"), address: { await gate.address() },
            publish: { settings in published.withLock { $0.append(settings) } })

        let door = BTHomeBroadcastTests.value("door", .bool(true))
        let pulses = BTHomeBroadcastTests.value("pulses", .number(5))
        await advertiser.reading(door)
        var asked = gate.asked.makeAsyncIterator()
        await asked.next()
        await advertiser.reading(pulses)
        gate.open()

        // The first packet (packet id 0, counter 0) has both readings.
        var expected = try #require(BTHomeBroadcast(config: config))
        _ = expected.record(door)
        _ = expected.record(pulses)
        let encryption = BTHomeEncryption(key: try #require(config.bluetooth.bthome.key), address: Self.address, counter: 0)
        let first = expected.settings(base: base, packetID: 0, encryption: encryption).settings
        _ = await eventually { !published.withLock { $0.isEmpty } }
        #expect(published.withLock { $0.first?.passiveServiceData?.data } == first.passiveServiceData?.data)

        try await Task.sleep(for: BTHomeAdvertiser.minimumInterval + .milliseconds(500))
        #expect(published.withLock { $0.count } == 1, "a second packet with nothing new")
        await advertiser.finish()
    }
}
