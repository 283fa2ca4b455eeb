import BluetoothCore
import Foundation
import TestHarness
import Testing

/// The issue's "must show" list through gattway's executable: `gattway run` with a configuration
/// (GatewayRig), the phones Bumble centrals. Over TCP to the virtual controller by default; inside
/// the VM stage (GATTWAY_E2E_TRANSPORT=vhci) through the HCI user channel on a kernel adapter.
// The time limit is for the VM stage, where everything runs under emulation; over TCP the suite
// takes well under a minute.
@Suite(.serialized, .timeLimit(.minutes(10)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct ExecutableEndToEndTests {
    static let name = "gattway-e2e"
    static func uuid(_ suffix: String) -> BluetoothUUID { BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DC\(suffix)")! }
    static let service = uuid("E2E0")
    static let short = uuid("E2E1")
    static let long = uuid("E2E2")
    static let writable = uuid("E2E3")
    static let echo = uuid("E2E4")
    static let counted = uuid("E2E5")
    static let indicated = uuid("E2E6")
    static let shortValue = Array("gattway".utf8)
    static let longValue = (0..<300).map { UInt8($0 % 251) }

    /// A 128-bit service with: a short static value, a 300-byte static value, a writable value
    /// (request and command), an echo (written, and notified to its subscribers), and a pulse
    /// counter on a simulated GPIO line notified on one characteristic and indicated on another
    /// (2 pulses a second: in the VM stage several phones share one emulated CPU). Writes are open:
    /// pairing is not what this suite is about. `max_centrals` is 8 unless a test says otherwise.
    static let config = configuration(maxCentrals: 8)

    static func configuration(maxCentrals: Int) -> String {
        """
        device: {name: gattway e2e}
        bluetooth:
          advertising:
            local_name: \(name)
            service_uuids: [\(service)]
            interval: 20ms
          max_centrals: \(maxCentrals)
        gpio:
          backend: simulated
          chips:
            - label: e2e
              lines:
                - name: PULSES
                  generator: {type: pulses, rate: 2}
        sensors:
          - {id: pulses, kind: counter, line: PULSES}
        services:
          - uuid: \(service)
            name: e2e
            characteristics:
              - uuid: \(short)
                name: short
                format: utf8
                source: {static: gattway}
              - uuid: \(long)
                name: long
                format: bytes
                max_length: 512
                source: {static: "\(longValue.hexString)"}
              - uuid: \(writable)
                name: writable
                format: bytes
                max_length: 512
                properties: [read, write, write_without_response]
                permissions: {write: open}
                source: {written: "00"}
              - uuid: \(echo)
                name: echo
                format: bytes
                max_length: 512
                properties: [read, write, notify]
                permissions: {write: open}
                source: {written: "00"}
              - uuid: \(counted)
                name: counted
                format: uint32
                properties: [read, notify]
                source: {sensor: pulses}
              - uuid: \(indicated)
                name: indicated
                format: uint32
                properties: [read, indicate]
                source: {sensor: pulses}
        """
    }

    /// Value handles by characteristic UUID, from a phone's discovery.
    struct Handles {
        let services: [[String: Any]]
        let byUUID: [BluetoothUUID: Int]
        let descriptors: [BluetoothUUID: [BluetoothUUID]]

        init(_ discovered: PhoneReply) {
            services = discovered["services"] as? [[String: Any]] ?? []
            var byUUID: [BluetoothUUID: Int] = [:]
            var descriptors: [BluetoothUUID: [BluetoothUUID]] = [:]
            for service in services {
                for characteristic in service["characteristics"] as? [[String: Any]] ?? [] {
                    guard let uuid = BluetoothUUID(characteristic["uuid"] as? String ?? "") else { continue }
                    byUUID[uuid] = characteristic["value_handle"] as? Int
                    descriptors[uuid] = (characteristic["descriptors"] as? [[String: Any]] ?? [])
                        .compactMap { BluetoothUUID($0["uuid"] as? String ?? "") }
                }
            }
            self.byUUID = byUUID
            self.descriptors = descriptors
        }

        subscript(uuid: BluetoothUUID) -> Int { byUUID[uuid] ?? -1 }

        func characteristics(of service: BluetoothUUID) -> [BluetoothUUID] {
            let ours = services.first { BluetoothUUID($0["uuid"] as? String ?? "") == service }
            return (ours?["characteristics"] as? [[String: Any]] ?? []).compactMap { BluetoothUUID($0["uuid"] as? String ?? "") }
        }
    }

    static func values(_ reply: PhoneReply) -> [(handle: Int, bytes: [UInt8], indication: Bool)] {
        (reply["values"] as? [[String: Any]] ?? []).map {
            (
                $0["handle"] as? Int ?? -1, [UInt8](hexString: $0["value"] as? String ?? "") ?? [],
                $0["indication"] as? Bool ?? false
            )
        }
    }

    static func counter(_ bytes: [UInt8]) -> UInt32? {
        bytes.count == 4 ? bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) } : nil
    }

    /// The handle gattway gave the connection that `mark` precedes (its "central connected" line).
    static func connectionHandle(_ rig: GatewayRig, since mark: Int) -> String? {
        guard rig.waitForLog("central connected", since: mark, timeout: 10) else { return nil }
        let line = rig.log(since: mark).split(separator: "\n").first { $0.contains("central connected") }
        guard let line, let start = line.range(of: "(handle ") else { return nil }
        return String(line[start.upperBound...].prefix { $0 != ")" })
    }

    @Test func onePhoneDoesEverything() async throws {
        let rig = try await GatewayRig(config: Self.config, advertisedName: Self.name)
        defer { rig.stop() }
        let (phone, found) = try await rig.connectedPhone()

        // The scan found the name and the 128-bit service UUID (GatewayRig scans by name).
        #expect(found.string("name") == Self.name)
        #expect((found["uuids"] as? [String] ?? []).contains { BluetoothUUID($0) == Self.service })

        // Full discovery at the default MTU: services, characteristics, descriptors (CCCDs).
        let handles = Handles(try await phone.expect("discover"))
        #expect(
            handles.characteristics(of: Self.service)
                == [Self.short, Self.long, Self.writable, Self.echo, Self.counted, Self.indicated])
        #expect(handles.services.contains { BluetoothUUID($0["uuid"] as? String ?? "") == BluetoothUUID(0x1800) })
        #expect(handles.services.contains { BluetoothUUID($0["uuid"] as? String ?? "") == BluetoothUUID(0x1801) })
        for uuid in [Self.echo, Self.counted, Self.indicated] {
            #expect(handles.descriptors[uuid]?.contains(BluetoothUUID(0x2902)) == true, "\(uuid) has a CCCD")
        }

        // At MTU 23 the 300-byte value takes a Read Request and Read Blob Requests.
        #expect(try await phone.expect("read", ["handle": handles[Self.long]]).bytes("value") == Self.longValue)
        #expect(try await phone.expect("mtu", ["mtu": 517]).int("mtu") == 517)
        #expect(try await phone.expect("read", ["handle": handles[Self.short]]).bytes("value") == Self.shortValue)
        #expect(try await phone.expect("read", ["handle": handles[Self.long]]).bytes("value") == Self.longValue)

        let written = try await phone.expectEveryKindOfWriteReadBack(handles[Self.writable])

        // Notifications and indications of the pulse counter: each indication is confirmed by the
        // phone (Bumble's client), and gattway sends the next only after the confirmation, so
        // several arriving means several confirmed.
        try await phone.expect("subscribe", ["handle": handles[Self.counted]])
        let notified = Self.values(
            try await phone.expect(
                "notifications",
                [
                    "count": 3, "timeout": 10,
                    "handle": handles[Self.counted]
                ]))
        #expect(notified.count == 3 && notified.allSatisfy { !$0.indication })
        let counts = notified.compactMap { Self.counter($0.bytes) }
        #expect(counts.count == 3 && counts == counts.sorted() && Set(counts).count == 3, "\(counts)")
        try await phone.expect("subscribe", ["handle": handles[Self.indicated], "indicate": true])
        let indicated = Self.values(
            try await phone.expect(
                "notifications",
                [
                    "count": 3, "timeout": 10,
                    "handle": handles[Self.indicated]
                ]))
        #expect(indicated.count == 3 && indicated.allSatisfy(\.indication))
        let indicatedCounts = indicated.compactMap { Self.counter($0.bytes) }
        #expect(indicatedCounts.count == 3 && Set(indicatedCounts).count == 3, "\(indicatedCounts)")

        // A write to the echo characteristic comes back as a notification.
        try await phone.expect("subscribe", ["handle": handles[Self.echo]])
        try await phone.expect("write", ["handle": handles[Self.echo], "value": Array(written.prefix(200)).hexString])
        let echoed = Self.values(
            try await phone.expect(
                "notifications",
                [
                    "count": 1, "timeout": 10,
                    "handle": handles[Self.echo]
                ]))
        #expect(echoed.first?.bytes == Array(written.prefix(200)))

        let mark = rig.logMark
        try await phone.expect("disconnect")
        #expect(rig.waitForLog("central disconnected", since: mark, timeout: 10))
        #expect(!rig.log.contains("unconfirmed"))
        #expect(rig.stop() == 0, "gattway exits 0 on SIGTERM")
    }

    /// As many phones at once as `max_centrals` allows (8 over TCP; 4 in the VM stage, see
    /// `fullHouse`), each with its own MTU and subscriptions; one killed with a prepared write half
    /// queued. The others carry on (one's own prepared write, reads, notifications and
    /// indications, an echo truncated to each one's MTU), and a phone connecting afterwards gets
    /// the killed phone's connection handle back with an empty prepare queue.
    @Test func fullHouseOneKilledMidPreparedWrite() async throws {
        let count = try Self.fullHouse()
        let rig = try await GatewayRig(config: Self.configuration(maxCentrals: count), advertisedName: Self.name)
        defer { rig.stop() }
        let mtus = (0..<count).map { 23 + 140 * $0 / (count - 1) }  // 23 … 163
        let phones = try await rig.phones(count)
        var connectionHandles: [String?] = []
        var handles: Handles?
        for (phone, mtu) in zip(phones, mtus) {
            let mark = rig.logMark
            try await rig.connect(phone, mtu: mtu)
            connectionHandles.append(Self.connectionHandle(rig, since: mark))
            handles = Handles(try await phone.expect("discover"))
        }
        let h = try #require(handles)
        #expect(rig.waitForLog("not advertising: \(count) of \(count) centrals connected", timeout: 5))

        // Own subscriptions: even phones get the counter notified, odd ones indicated; all the echo.
        func subscription(_ index: Int) -> Int { index % 2 == 0 ? h[Self.counted] : h[Self.indicated] }
        for (index, phone) in phones.enumerated() {
            try await phone.expect("subscribe", ["handle": subscription(index), "indicate": index % 2 == 1])
            try await phone.expect("subscribe", ["handle": h[Self.echo]])
        }
        // Own MTU: a plain Read Request returns MTU - 1 bytes of the 300-byte value.
        for (index, phone) in phones.enumerated() {
            let read = try await phone.expect("read", ["handle": h[Self.long], "long": false])
            #expect(read.bytes("value") == Array(Self.longValue.prefix(mtus[index] - 1)), "phone \(index)")
        }

        // One phone (3 of 8, 1 of 4) queues two parts of a prepared write, another (5 of 8, 3 of 4)
        // the first half of its own (parts of 50 bytes fit both MTUs); the first is killed before
        // executing.
        let killed = count / 2 - 1
        let finisher = count / 2 + 1
        func prepare(_ phone: Phone, _ value: [UInt8], parts: Range<Int>) async throws {
            for part in parts {
                try await phone.expect(
                    "prepare",
                    [
                        "handle": h[Self.writable], "offset": part * 50,
                        "value": Array(value[part * 50..<part * 50 + 50]).hexString
                    ])
            }
        }
        try await prepare(phones[killed], Array(repeating: 0xEE, count: 100), parts: 0..<2)
        let intact = (0..<300).map { UInt8($0 % 7) }
        try await prepare(phones[finisher], intact, parts: 0..<3)
        let mark = rig.logMark
        phones[killed].kill()
        #expect(rig.waitForLog("central disconnected", since: mark, timeout: 10))

        // The other finishes its prepared write; every surviving phone reads it back intact.
        try await prepare(phones[finisher], intact, parts: 3..<6)
        try await phones[finisher].expect("execute", ["commit": true])
        let survivors = phones.indices.filter { $0 != killed }
        for index in survivors {
            #expect(
                try await phones[index].expect("read", ["handle": h[Self.writable]]).bytes("value") == intact,
                "phone \(index)")
        }
        // Notifications and indications go on, each phone getting only what it subscribed to.
        for index in survivors {
            let reply = try await phones[index].expect(
                "notifications",
                [
                    "count": 2, "timeout": 10,
                    "handle": subscription(index)
                ])
            let got = Self.values(reply)
            #expect(got.count == 2 && got.allSatisfy { $0.indication == (index % 2 == 1) }, "phone \(index)")
            let others = reply["others"] as? [Int] ?? []
            #expect(others.allSatisfy { $0 == h[Self.echo] }, "phone \(index) got \(others)")
        }
        // An echo longer than every MTU reaches each subscriber truncated to its own MTU - 3.
        let long = (0..<250).map { UInt8($0) }
        try await phones[survivors[0]].expect("write", ["handle": h[Self.echo], "value": long.hexString])
        for index in survivors {
            let got = Self.values(
                try await phones[index].expect(
                    "notifications",
                    [
                        "count": 1, "timeout": 10,
                        "handle": h[Self.echo]
                    ]))
            #expect(got.first?.bytes == Array(long.prefix(mtus[index] - 3)), "phone \(index)")
        }

        // Advertising resumed at one below the limit: a new phone connects, on the killed phone's
        // connection handle, and its Execute Write finds an empty queue (the killed phone's parts
        // were discarded).
        let newMark = rig.logMark
        let (newcomer, _) = try await rig.connectedPhone(mtu: 517)
        #expect(connectionHandles[killed] != nil)
        #expect(Self.connectionHandle(rig, since: newMark) == connectionHandles[killed])
        _ = try await newcomer.expect("discover")
        try await newcomer.expect("execute", ["commit": true])
        #expect(try await newcomer.expect("read", ["handle": h[Self.writable]]).bytes("value") == intact)
        let own = (0..<300).map { UInt8(($0 * 3) % 256) }
        try await newcomer.expect("write", ["handle": h[Self.writable], "value": own.hexString])
        #expect(try await phones[count - 1].expect("read", ["handle": h[Self.writable]]).bytes("value") == own)
        #expect(!rig.controller.log.contains("credit violation:"))
    }

    /// The phones of `fullHouseOneKilledMidPreparedWrite` (and `max_centrals`): 8 over TCP, 4 in
    /// the VM stage. Four keep what the user channel adds to the TCP run (several links' ACL data
    /// and controller credits interleaved through the kernel, one link dropped mid-traffic and its
    /// handle reused, advertising stopped at the limit and resumed), with a killed phone and a
    /// finishing one whose MTUs fit 50-byte parts and survivors both notified and indicated. Each
    /// Bumble phone is a Python process on the VM's one emulated CPU: eight made this test about
    /// 6 minutes of that stage. Eight at once is host logic, which the TCP run proves.
    static func fullHouse() throws -> Int {
        try GatewayRig.Transport.fromEnvironment() == .vhci ? 4 : 8
    }

    /// The virtual controller dropped under a running gattway and started again on the same
    /// port: gattway notices, recovers by itself (same process), advertises again, and a new
    /// phone connects, reads and gets notifications.
    @Test func recoversWhenTheControllerIsDroppedAndRestarted() async throws {
        let rig = try await GatewayRig(config: Self.config, advertisedName: Self.name)
        defer { rig.stop() }
        let (phone, _) = try await rig.connectedPhone()
        let handles = Handles(try await phone.expect("discover"))
        let mark = rig.logMark
        let hci = try await rig.restartController()
        phone.kill()
        let recovery = rig.log(since: mark)
        #expect(recovery.contains("controller resetting"))
        #expect(recovery.contains("controller poweredOn"))
        #expect(rig.gattway.waitForExit(timeout: 0) == nil, "gattway is still the same process")
        if hci != rig.hci {
            // With vhci the kernel may number the new adapter differently; gattway keeps retrying
            // the adapter it was given, so it could only have recovered on that one.
            Issue.record("the new controller is \(hci), gattway runs on \(rig.hci)")
        }

        let (newPhone, _) = try await rig.connectedPhone(mtu: 517)
        #expect(try await newPhone.expect("read", ["handle": handles[Self.long]]).bytes("value") == Self.longValue)
        try await newPhone.expect("discover")
        try await newPhone.expect("subscribe", ["handle": handles[Self.counted]])
        let got = Self.values(
            try await newPhone.expect(
                "notifications",
                [
                    "count": 2, "timeout": 10,
                    "handle": handles[Self.counted]
                ]))
        #expect(got.count == 2)
    }
}
