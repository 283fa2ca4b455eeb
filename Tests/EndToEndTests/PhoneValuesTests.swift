import BluetoothCore
import Foundation
import TestHarness
import Testing

extension LoadSensitiveEndToEnd {
    /// The `gattway` executable on the virtual controller with simulated GPIO, against Bumble phones:
    /// rate-limited notifications of a fast line, and BTHome advertising that follows the value.
    @Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
    struct PhoneValuesTests {
        static let characteristicUUID = "6E400002-B5A3-F393-E0A9-E50E24DC0001"

        /// A pulse counter on a simulated line pulsing at `rate` Hz, carried by one uint32
        /// characteristic and broadcast as BTHome.
        static func config(name: String, rate: Int) -> String {
            simulatedLine(name: name, line: "PULSES", generator: "{type: pulses, rate: \(rate)}") + """

                sensors:
                  - {id: pulses, kind: counter, line: PULSES, bthome: true}
                services:
                  - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                    name: gateway
                    characteristics:
                      - uuid: \(characteristicUUID)
                        name: pulses
                        format: uint32
                        source: {sensor: pulses}
                """
        }

        static func uint32(_ bytes: [UInt8]) -> Int {
            bytes.prefix(4).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
        }

        /// The BTHome count32 object (0x3E) in the service data for UUID 0xFCD2 of an advertisement.
        static func bthomeCount(_ reply: PhoneReply) -> Int? {
            let bytes = (reply.bytes("adv_data") ?? []) + (reply.bytes("scan_response") ?? [])
            var offset = 0
            while offset + 1 < bytes.count {
                let length = Int(bytes[offset])
                guard length > 0, offset + 1 + length <= bytes.count else { return nil }
                let field = Array(bytes[(offset + 1)...(offset + length)])
                // Service Data - 16-bit UUID, FCD2, device information 0x40, the packet id (object
                // 0x00), then the other objects.
                if field.count >= 11, field[0] == 0x16, field[1] == 0xD2, field[2] == 0xFC, field[3] == 0x40,
                    field[4] == 0x00, field[6] == 0x3E
                {
                    return uint32(Array(field[7...10]))
                }
                offset += 1 + length
            }
            return nil
        }

        /// The device `name`, advertising every 20 ms, with one simulated line driven by `generator`.
        static func simulatedLine(name: String, line: String, generator: String) -> String {
            """
            device: {name: \(name)}
            bluetooth:
              advertising: {interval: 20ms}
            gpio:
              backend: simulated
              chips:
                - lines:
                    - name: \(line)
                      generator: \(generator)
            """
        }

        /// A door contact on a simulated line driven by `generator`, notified under
        /// `min_interval: 500ms`.
        static func doorConfig(name: String, generator: String) -> String {
            simulatedLine(name: name, line: "DOOR", generator: generator) + """

                sensors:
                  - {id: door, kind: binary, line: DOOR}
                services:
                  - uuid: 6E400001-B5A3-F393-E0A9-E50E24DC0001
                    name: gateway
                    characteristics:
                      - uuid: \(characteristicUUID)
                        name: door
                        format: bool
                        properties: [read, notify]
                        source: {sensor: door}
                        notify: {min_interval: 500ms}
                """
        }

        /// The value handle of the test characteristic, after discovery.
        static func valueHandle(_ phone: Phone) async throws -> Int {
            try await phone.valueHandle(of: Self.characteristicUUID)
        }

        static func values(_ reply: PhoneReply) -> [[UInt8]] {
            (reply["values"] as? [[String: Any]] ?? []).compactMap { ($0["value"] as? String).flatMap { [UInt8](hexString: $0) } }
        }

        /// A line toggling at 10 Hz under `min_interval: 500ms` reaches the phone at 2 ± 1
        /// notifications per second. (That each is the newest value and the last of a burst arrives is
        /// shown on a virtual clock in ValuePipelineTests and NotifyTests.)
        @Test func aLineTogglingAtTenHertzReachesThePhoneAtTwoPerSecond() async throws {
            let rig = try await GatewayRig(
                // 50 ms high, 50 ms low: toggling at 10 Hz.
                config: Self.doorConfig(name: "values-rate", generator: "{type: square, period: 100ms}"),
                advertisedName: "values-rate")
            defer { rig.stop() }
            let phone = try await rig.phone()
            try await rig.connect(phone)
            let handle = try await Self.valueHandle(phone)
            try await phone.expect("subscribe", ["handle": handle])
            let windowStart = ContinuousClock.now
            let window = Self.values(try await phone.expect("notifications", ["count": 1000, "timeout": 5]))
            let elapsed = (ContinuousClock.now - windowStart) / .seconds(1)
            let rate = Double(window.count) / elapsed
            print("10 Hz toggling under min_interval 500ms: \(window.count) notifications in \(elapsed) s = \(rate)/s")
            #expect((1.0...3.0).contains(rate), "\(window.count) notifications in \(elapsed) s")
            #expect(window.allSatisfy { $0 == [0x00] || $0 == [0x01] })
        }

        /// The counters of `path` in the last "notify counters" line gattway logged (it logs one when
        /// it stops): `sent`, `coalesced`, `suppressed`, `dropped`.
        static func counters(_ stderr: String, _ path: String) -> [String: Int] {
            guard let line = stderr.split(separator: "\n").last(where: { $0.contains("notify counters") }),
                let range = line.range(of: "\(path) ")
            else { return [:] }
            var result: [String: Int] = [:]
            for field in line[range.upperBound...].prefix(while: { $0 != ";" }).split(separator: " ") {
                let parts = field.split(separator: "=")
                if parts.count == 2, let value = Int(parts[1]) { result[String(parts[0])] = value }
            }
            return result
        }

        /// Two phones subscribed to a door contact whose line pulses at 10 kHz (20,000 values a second)
        /// under `min_interval: 500ms`; the second phone's link stalls (its controller stops completing
        /// packets). The first still gets 2 ± 1 notifications a second, and gattway's memory stays flat
        /// over more than 100,000 values.
        @Test func aStalledPhoneChangesNeitherTheOthersRateNorMemory() async throws {
            let rig = try await GatewayRig(
                config: Self.doorConfig(name: "values-stall", generator: "{type: pulses, rate: 10000}"),
                advertisedName: "values-stall")
            defer { rig.stop() }

            var phones: [Phone] = []
            var handle = 0
            for _ in 0..<2 {
                let phone = try await rig.phone()
                try await rig.connect(phone)
                handle = try await Self.valueHandle(phone)
                try await phone.expect("subscribe", ["handle": handle])
                phones.append(phone)
            }
            let (first, stalled) = (phones[0], phones[1])
            rig.controller.stall(stalled.address)

            // Warm-up: the stalled link fills what it may hold, and gattway's bounded buffers (edge
            // ring, sensor values) reach the fill a busy machine gives them; then the first phone's
            // rate, chunk by chunk, and memory, long enough for 100,000 values on a busy 2-core machine.
            _ = try await first.expect("notifications", ["count": 1000, "timeout": 10])
            let before = try #require(rig.residentKilobytes)
            var window: [[UInt8]] = []
            var elapsed = 0.0
            var samples: [String] = []
            for chunk in 0..<6 {
                let chunkStart = ContinuousClock.now
                let received = Self.values(try await first.expect("notifications", ["count": 1000, "timeout": 5]))
                let seconds = (ContinuousClock.now - chunkStart) / .seconds(1)
                #expect((1.0...3.0).contains(Double(received.count) / seconds), "chunk \(chunk): \(received.count) in \(seconds) s")
                window += received
                elapsed += seconds
                samples.append("\(rig.residentKilobytes ?? 0) kB/\(rig.threads ?? 0) threads")
            }
            let after = try #require(rig.residentKilobytes)

            #expect(rig.stop() == 0)
            let counters = Self.counters(rig.log, "gateway/door")
            // Each value is judged once per subscriber: sent, coalesced, suppressed or dropped.
            let judged = ["sent", "coalesced", "suppressed", "dropped"].reduce(0) { $0 + (counters[$1] ?? 0) } / 2
            let rate = Double(window.count) / elapsed
            print(
                """
                stalled second phone: first phone \(window.count) notifications in \(elapsed) s = \(rate)/s; \
                gattway RSS \(before) kB → \(after) kB (\(after - before) kB, every 5 s: \(samples)); \(judged) values per phone; counters \(counters)
                """)
            #expect((1.5...2.5).contains(rate), "\(window.count) notifications in \(elapsed) s")
            #expect(judged >= 100_000, "counters \(counters)")
            #expect(after - before < 2048, "RSS \(before) kB → \(after) kB")
        }

        /// Eight phones subscribed, three of them stalled (their controller returns no credits): the
        /// stalled hold only their shares of the link, and the five others keep their rate (2/s
        /// under `min_interval: 500ms` from a 10 Hz line).
        @Test func threeStalledPhonesOfEightLeaveTheOtherFiveTheirRate() async throws {
            let rig = try await GatewayRig(
                config: Self.doorConfig(name: "values-stall8", generator: "{type: square, period: 100ms}")
                    .replacingOccurrences(
                        of: "  advertising: {interval: 20ms}", with: "  advertising: {interval: 20ms}\n  max_centrals: 8"),
                advertisedName: "values-stall8")
            defer { rig.stop() }
            var phones: [Phone] = []
            for _ in 0..<8 {
                let phone = try await rig.phone()
                try await rig.connect(phone)
                try await phone.expect("subscribe", ["handle": try await Self.valueHandle(phone)])
                phones.append(phone)
            }
            let (stalled, healthy) = (phones.prefix(3), Array(phones.dropFirst(3)))
            for phone in stalled { rig.controller.stall(phone.address) }
            // Past the moment the stalled links filled what they may hold.
            for phone in healthy { _ = try await phone.expect("notifications", ["count": 2, "timeout": 10]) }
            // The first phones have been subscribed for as long as the others took to connect: drain
            // what they hold, or the window below would count that backlog as rate.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for phone in healthy {
                    group.addTask { _ = try await phone.expect("notifications", ["count": 1000, "timeout": 0.2]) }
                }
                try await group.waitForAll()
            }
            let start = ContinuousClock.now
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for phone in healthy {
                    group.addTask { Self.values(try await phone.expect("notifications", ["count": 1000, "timeout": 6])).count }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let seconds = (ContinuousClock.now - start) / .seconds(1)
            print("three of eight phones stalled: the other five got \(counts) notifications in \(seconds) s")
            for count in counts {
                #expect((1.4...2.6).contains(Double(count) / seconds), "\(counts) in \(seconds) s:\n\(rig.log.suffix(3000))")
            }
        }

        /// BTHome service data in the advertisement carries the current count and follows it (updates at
        /// most once a second).
        @Test func bthomeAdvertisingFollowsTheValue() async throws {
            let rig = try await GatewayRig(config: Self.config(name: "values-bthome", rate: 4), advertisedName: "values-bthome")
            defer { rig.stop() }
            let phone = try await rig.phone()
            var first: Int?
            for _ in 0..<20 where first == nil {
                first = Self.bthomeCount(try await phone.expect("scan", ["name": "values-bthome", "timeout": 10]))
            }
            let before = try #require(first, "BTHome service data appears once the counter has a value")
            try await Task.sleep(for: .milliseconds(2500))
            let later = try await phone.expect("scan", ["name": "values-bthome", "timeout": 10])
            let after = try #require(Self.bthomeCount(later), "adv \(later.string("adv_data") ?? "")")
            print(
                "BTHome count32: \(before), 2.5 s later \(after); adv_data \(later.string("adv_data") ?? ""), scan_response \(later.string("scan_response") ?? "")"
            )
            #expect((6...14).contains(after - before), "4 pulses/s for 2.5 s: \(before) → \(after)")
        }
    }
}
