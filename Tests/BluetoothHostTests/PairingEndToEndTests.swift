import BluetoothCore
import BluetoothGATT
import BluetoothSMP
import Foundation
import Logging
import StateFile
import TestHarness
import Testing

@testable import BluetoothHost

/// Every line the host logs, at trace level, so a test can grep the log of a pairing run.
final class CapturedLog: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    var text: String { lock.withLock { lines.joined(separator: "\n") } }

    func append(_ line: String) { lock.withLock { lines.append(line) } }

    var logger: Logger {
        var logger = Logger(label: "pairing-e2e") { label in
            MultiplexLogHandler([CapturingLogHandler(log: self), StreamLogHandler.standardError(label: label)])
        }
        logger.logLevel = .trace
        return logger
    }
}

struct CapturingLogHandler: LogHandler {
    let log: CapturedLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
        log.append("\(event.level) \(event.message) \(merged.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))")
    }
}

/// Pairing, encryption and bonding between gattway's host and Bumble phones on the virtual
/// controller: issue 9's "must show".
@Suite(.serialized, .timeLimit(.minutes(3)), .disabled(if: integrationTestsStandAside, unitOnlyReason))
struct PairingEndToEndTests {
    static let serviceUUID = BluetoothUUID("7E570001-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let encryptedUUID = BluetoothUUID("7E570002-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let outputUUID = BluetoothUUID("7E570003-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let notifyUUID = BluetoothUUID("7E570004-B5A3-F393-E0A9-E50E24DCCA9E")!
    static let name = "gattway-pairing"

    /// An `encrypted` readable value, an output whose writes need an encrypted bonded link (the
    /// configuration's default for outputs) and which anyone may read, and an open notifying value.
    static let service = GATTService(
        uuid: serviceUUID,
        characteristics: [
            GATTCharacteristic(
                uuid: encryptedUUID, properties: [.read], permissions: [.readEncryptionRequired],
                value: .dynamic),
            GATTCharacteristic(
                uuid: outputUUID, properties: [.read, .write],
                permissions: [.readable, .writeEncryptionRequired, .writeBondingRequired], value: .dynamic),
            GATTCharacteristic(uuid: notifyUUID, properties: [.read, .notify], permissions: [.readable], value: .dynamic)
        ])

    struct Running {
        let controller: VirtualController
        let host: PeripheralHost
        let peripheral: Peripheral
        let published: PublishedService
        let stateDirectory: String
        let stateWriter: StateFileWriter
        let log: CapturedLog
        /// The host's events, recorded from the start so none is missed.
        let events: EventLog<HostEvent>
        let task: Task<Void, Never>

        func stop() {
            task.cancel()
            controller.stop()
        }

        func handle(_ uuid: BluetoothUUID) -> Int { Int(published.characteristic(uuid)!.valueHandle) }

        func connectedPhone() async throws -> Phone {
            let phone = try await Phone(controllerPort: controller.tcpPort)
            try await connect(phone)
            return phone
        }

        func connect(_ phone: Phone) async throws {
            let found = try await phone.expect("scan", ["name": PairingEndToEndTests.name])
            try await phone.expect("connect", ["address": try #require(found.string("address"))])
        }

        /// Waits until what the host has saved so far is on disk: it hands its bonds to the state
        /// writer's own thread, so a file read straight after a host event can race the write.
        func stateFilesWritten() async {
            _ = await host.bonds  // the host's turn that handed the write over has ended
            stateWriter.waitUntilIdle()
        }

        /// The stored bond file as JSON, once written.
        func bondFile() async throws -> [String: Any] {
            await stateFilesWritten()
            let data = try Data(contentsOf: URL(fileURLWithPath: stateDirectory + "/bonds.json"))
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
    }

    static func start(
        security: SecurityConfiguration = .standard,
        confirmsNumericComparison: Bool = false
    ) async throws -> Running {
        let virtual = try await VirtualController()
        let log = CapturedLog()
        let directory = try temporaryDirectory("pairing").path
        let binding = GATTPeripheralBinding(configuration: GATTServer.Configuration(deviceName: name))
        let stateWriter = StateFileWriter()
        let host = PeripheralHost(
            configuration: HostConfiguration(
                transport: .tcp(host: "127.0.0.1", port: UInt16(virtual.tcpPort)), stateDirectory: directory,
                advertising: AdvertisingSettings(localName: name, serviceUUIDs: [serviceUUID], intervalMilliseconds: 20),
                reconnectDelays: [.milliseconds(100), .milliseconds(300)], security: security,
                confirmsNumericComparison: confirmsNumericComparison),
            peripheral: binding, stateWriter: stateWriter, logger: log.logger)
        let peripheral = binding.peripheral
        let values = ValueStore()
        await peripheral.setRequestHandlers(values.handlers(longValue: Array("secret".utf8)))
        let events = EventLog<HostEvent>()
        await host.setEventSink(events.append)
        let peripheralEvents = EventLog<PeripheralEvent>()
        await peripheral.setEventSink(peripheralEvents.append)
        let task = Task { await host.run() }
        _ = try await peripheralEvents.next { $0 == .stateChanged(.poweredOn) }
        let published = try await peripheral.add(service)
        return Running(
            controller: virtual, host: host, peripheral: peripheral, published: published,
            stateDirectory: directory, stateWriter: stateWriter, log: log, events: events, task: task)
    }

    static let insufficientAuthentication = 0x05
    static let insufficientEncryption = 0x0F

    // MARK: Just Works

    @Test func justWorksPairingUnlocksTheEncryptedCharacteristicAndBondsPrivately() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        let encrypted = running.handle(Self.encryptedUUID)

        // Before pairing the central is told to encrypt, and gets nothing.
        let refused = try await phone.run("read", ["handle": encrypted])
        #expect(!refused.ok)
        #expect(refused.int("att_error") == Self.insufficientEncryption)

        let paired = try await phone.expect("pair", ["io": "no_input_no_output"])
        #expect(paired["encrypted"] as? Bool == true)
        #expect(paired["authenticated"] as? Bool == false)
        #expect(try await phone.expect("read", ["handle": encrypted]).string("value") == Array("secret".utf8).hexString)

        let event = try await running.events.first { if case .paired = $0 { true } else { false } }
        guard case .paired(let central, _, let bonded) = event else { return }
        #expect(bonded)
        let security = try await running.events.first {
            if case .securityChanged(_, let security) = $0, security.isBonded { true } else { false }
        }
        #expect(
            security
                == .securityChanged(
                    central,
                    LinkSecurity(
                        isEncrypted: true, isAuthenticated: false, encryptionKeySize: 16, isBonded: true)))

        // The bond file: 0600, owned by the user running gattway, one bond with its keys.
        await running.stateFilesWritten()
        let path = running.stateDirectory + "/bonds.json"
        var status = stat()
        #expect(stat(path, &status) == 0)
        #expect(status.st_mode & 0o777 == 0o600)
        #expect(status.st_uid == getuid())
        let bonds = try #require(try await running.bondFile()["bonds"] as? [[String: Any]])
        #expect(bonds.count == 1)
        let bond = try #require(bonds.first)
        let secrets = ["longTermKey", "peerIdentityResolvingKey", "localIdentityResolvingKey"]
            .compactMap { bond[$0] as? String }
        #expect(secrets.count == 3, "the bond holds the LTK and both IRKs: \(bond.keys.sorted())")

        // No key appears in the log of the run, in either byte order.
        let log = running.log.text.lowercased()
        #expect(log.contains("paired with"))
        for secret in secrets {
            let bytes = try #require([UInt8](hexString: secret))
            #expect(!log.contains(bytes.hexString.lowercased()), "a key is in the log")
            #expect(!log.contains(Array(bytes.reversed()).hexString.lowercased()), "a key is in the log")
        }
    }

    // MARK: Passkey Entry

    @Test func passkeyEntryWithTheDisplayedPasskeyIsAuthenticated() async throws {
        let running = try await Self.start(security: try SecurityConfiguration(ioCapability: .displayOnly))
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        try await phone.expect("pair", ["io": "keyboard_only", "wait": false])
        let shown = try await running.events.first { if case .passkeyDisplayed = $0 { true } else { false } }
        guard case .passkeyDisplayed(_, let passkey?) = shown else {
            Issue.record("no passkey displayed: \(shown)")
            return
        }
        // The notice the owner reads it from.
        #expect(running.log.text.contains("enter passkey \(SecurityEvent.sixDigits(passkey)) on the device"))
        try await phone.expect("passkey", ["value": Int(passkey)])
        let paired = try await phone.expect("pairing")
        #expect(paired["authenticated"] as? Bool == true)
        let security = try await running.events.first {
            if case .securityChanged(_, let security) = $0, security.isAuthenticated, security.isBonded {
                true
            } else {
                false
            }
        }
        guard case .securityChanged(_, let link) = security else { return }
        #expect(link.isEncrypted && link.isBonded)
        #expect(try await phone.expect("read", ["handle": running.handle(Self.encryptedUUID)]).ok)
    }

    @Test func aWrongPasskeyFailsWithConfirmValueFailed() async throws {
        let running = try await Self.start(security: try SecurityConfiguration(ioCapability: .displayOnly))
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        try await phone.expect("pair", ["io": "keyboard_only", "wait": false])
        let shown = try await running.events.first { if case .passkeyDisplayed = $0 { true } else { false } }
        guard case .passkeyDisplayed(_, let passkey?) = shown else { return }
        try await phone.expect("passkey", ["value": Int((passkey + 1) % 1_000_000)])
        let failed = try await phone.run("pairing")
        #expect(!failed.ok)
        #expect(failed.int("smp_error") == Int(PairingFailureReason.confirmValueFailed.rawValue))
        let event = try await running.events.first { if case .pairingFailed = $0 { true } else { false } }
        guard case .pairingFailed(_, let reason) = event else { return }
        #expect(reason.contains("(sent)"))
        // Still nothing for the central, and no bond stored.
        #expect(
            try await phone.run("read", ["handle": running.handle(Self.encryptedUUID)]).int("att_error")
                == Self.insufficientEncryption)
        #expect(await running.host.bonds.bonds.isEmpty)
    }

    @Test func aFixedPasskeyFromTheConfigurationPairsAndIsNeverLogged() async throws {
        let fixed: UInt32 = 271_828
        let running = try await Self.start(
            security: try SecurityConfiguration(
                ioCapability: .displayOnly,
                fixedPasskey: fixed))
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        try await phone.expect("pair", ["io": "keyboard_only", "wait": false])
        let shown = try await running.events.first { if case .passkeyDisplayed = $0 { true } else { false } }
        #expect(shown == .passkeyDisplayed(try #require(await running.host.connectedCentrals.first), passkey: nil))
        try await phone.expect("passkey", ["value": Int(fixed)])
        #expect(try await phone.expect("pairing")["authenticated"] as? Bool == true)
        _ = try await running.events.first { if case .paired = $0 { true } else { false } }
        #expect(running.log.text.contains("enter the configured passkey"))
        #expect(!running.log.text.contains("271828"))
    }

    // MARK: Numeric Comparison

    /// Both sides display and confirm: the phone's user accepts the number it shows, gattway's
    /// owner sees the same number (event and log) and presses the confirm button.
    @Test func numericComparisonConfirmedWithAPressIsAuthenticated() async throws {
        let running = try await Self.start(
            security: try SecurityConfiguration(ioCapability: .displayYesNo),
            confirmsNumericComparison: true)
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        try await phone.expect("pair", ["io": "display_yes_no", "wait": false])
        let shown = try await running.events.first { if case .numericComparison = $0 { true } else { false } }
        guard case .numericComparison(_, let number) = shown else { return }
        #expect(running.log.text.contains("confirm that the device shows \(SecurityEvent.sixDigits(number))"))
        await running.host.confirmNumericComparison()
        let paired = try await phone.expect("pairing")
        #expect(paired.int("compared") == Int(number), "both devices showed the same number")
        #expect(paired["authenticated"] as? Bool == true)
        #expect(try await phone.expect("read", ["handle": running.handle(Self.encryptedUUID)]).ok)
    }

    /// Without a confirm button nobody can check the number: the pairing is refused at once. With
    /// one, a press while two pairings wait cannot tell which it was meant for: both are refused.
    @Test func numericComparisonIsRefusedUnconfirmableOrAmbiguous() async throws {
        let unconfirmable = try await Self.start(security: try SecurityConfiguration(ioCapability: .displayYesNo))
        let lone = try await unconfirmable.connectedPhone()
        let refused = try await lone.run("pair", ["io": "display_yes_no"])
        #expect(refused.int("smp_error") == Int(PairingFailureReason.numericComparisonFailed.rawValue))
        #expect(unconfirmable.log.text.contains("nothing is configured to confirm it"))
        #expect(!unconfirmable.events.all.contains { if case .numericComparison = $0 { true } else { false } })
        unconfirmable.stop()

        let running = try await Self.start(
            security: try SecurityConfiguration(ioCapability: .displayYesNo),
            confirmsNumericComparison: true)
        defer { running.stop() }
        let phones = [try await running.connectedPhone(), try await running.connectedPhone()]
        for phone in phones { try await phone.expect("pair", ["io": "display_yes_no", "wait": false]) }
        // A phone reports its connection before the host has necessarily handled the controller's
        // Connection Complete: wait for both.
        var centrals = await running.host.connectedCentrals
        let deadline = ContinuousClock.now + .seconds(10)
        while centrals.count < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
            centrals = await running.host.connectedCentrals
        }
        #expect(centrals.count == 2)
        for central in centrals {
            _ = try await running.events.first {
                if case .numericComparison(central, _) = $0 { true } else { false }
            }
        }
        await running.host.confirmNumericComparison()
        for phone in phones {
            let failed = try await phone.run("pairing")
            #expect(failed.int("smp_error") == Int(PairingFailureReason.numericComparisonFailed.rawValue))
        }
        #expect(running.log.text.contains("2 pairings wait for a confirmation at once; refusing them all"))
        #expect(await running.host.bonds.bonds.isEmpty)
    }

    // MARK: Bonds

    @Test func aBondedPhoneReconnectsEncryptsWithoutPairingAndFindsItsSubscription() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        try await phone.expect("pair", ["io": "no_input_no_output"])
        try await phone.expect("discover")
        let notify = try #require(running.published.characteristic(Self.notifyUUID))
        try await phone.expect("subscribe", ["handle": Int(notify.valueHandle)])
        // The CCCD write of the bonded central reaches its bond on disk (before the host handles
        // the next PDU, so before the answer to this read).
        try await phone.expect("read", ["handle": Int(notify.valueHandle)])
        let cccd = try #require(notify.clientConfigurationHandle)
        let host = running.host
        #expect(await host.bonds.bonds.first?.clientConfigurations == [cccd: 1])
        let stored = try #require(try await running.bondFile()["bonds"] as? [[String: Any]]).first
        #expect(stored?["clientConfigurations"] as? [String: Int] == ["\(cccd)": 1])

        let first = try #require(await host.connectedCentrals.first)
        try await phone.expect("disconnect")
        _ = try await running.events.first { if case .disconnected = $0 { true } else { false } }
        #expect(await host.connectedCentrals.isEmpty)

        // Later: the same phone (its keys kept in its key store) connects again. gattway knows
        // the bond and asks it to encrypt (Security Request); the phone does, with its stored key.
        try await running.connect(phone)
        let reconnected = try await running.events.first { if case .connected(let central) = $0, central != first { true } else { false } }
        guard case .connected(let central) = reconnected else { return }
        let bondedAgain = try await running.events.first {
            if case .securityChanged(central, let security) = $0, security.isBonded { true } else { false }
        }
        #expect(
            bondedAgain
                == .securityChanged(
                    central,
                    LinkSecurity(
                        isEncrypted: true, isAuthenticated: false, encryptionKeySize: 16, isBonded: true)))
        #expect(try await phone.expect("security").int("security_requests") == 1, "asked once, on this connection only")
        let pairings = running.events.all.filter { if case .paired = $0 { true } else { false } }
        #expect(pairings.count == 1, "the reconnection did not pair again")

        // Its subscription is back: a notification arrives without a CCCD write on this connection.
        try await phone.expect("listen", ["handle": Int(notify.valueHandle)])
        let centralID = CentralID(UInt16(truncatingIfNeeded: central.connectionID))
        #expect(await running.peripheral.clientConfigurations(of: centralID) == [cccd: 1])
        #expect(try await running.peripheral.updateValue([0x42], for: notify))
        let received = try await phone.expect("notifications", ["count": 1])
        #expect((received["values"] as? [[String: Any]])?.first?["value"] as? String == "42")
    }

    /// What a phone with privacy does: it pairs from its identity (a static random address),
    /// distributes its IRK, and comes back from a resolvable private address generated from that
    /// IRK. gattway resolves it to the bond, asks it to encrypt with the bond's key, and restores
    /// its subscription; nobody pairs again.
    @Test func aBondedPhoneReconnectsFromAResolvablePrivateAddressAndFindsItsSubscription() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let phone = try await running.connectedPhone()
        try await phone.expect("pair", ["io": "no_input_no_output"])
        let pairedEvent = try await running.events.first { if case .paired = $0 { true } else { false } }
        guard case .paired(let first, let identity, bonded: true) = pairedEvent else {
            Issue.record("not bonded: \(pairedEvent)")
            return
        }
        try await phone.expect("discover")
        let notify = try #require(running.published.characteristic(Self.notifyUUID))
        try await phone.expect("subscribe", ["handle": Int(notify.valueHandle)])
        try await phone.expect("read", ["handle": Int(notify.valueHandle)])
        let cccd = try #require(notify.clientConfigurationHandle)
        #expect(await running.host.bonds.bonds.first?.clientConfigurations == [cccd: 1])
        try await phone.expect("disconnect")
        _ = try await running.events.first { if case .disconnected = $0 { true } else { false } }

        let privateAddress = try await phone.expect("private_address")
        let text = try #require(privateAddress.string("address"))
        let rpa = try #require(BluetoothAddress(String(text.prefix(17)), kind: .random))
        #expect(rpa.isResolvablePrivate, "\(rpa) is a resolvable private address")
        #expect(rpa != identity && rpa != first.address)
        let storedBond = try #require(try await running.bondFile()["bonds"] as? [[String: Any]]).first
        let storedIRK = storedBond?["peerIdentityResolvingKey"] as? String
        #expect(storedIRK != nil, "the phone distributed its IRK")

        try await running.connect(phone)
        let reconnected = try await running.events.first {
            if case .connected(let central) = $0, central != first { true } else { false }
        }
        guard case .connected(let central) = reconnected else { return }
        #expect(central.address == rpa, "the central connected from its resolvable private address")
        let bondedAgain = try await running.events.first {
            if case .securityChanged(central, let security) = $0, security.isBonded { true } else { false }
        }
        #expect(
            bondedAgain
                == .securityChanged(
                    central,
                    LinkSecurity(
                        isEncrypted: true, isAuthenticated: false, encryptionKeySize: 16, isBonded: true)))
        #expect(running.log.text.contains("\(central) is bonded (\(identity))"), "resolved to the bond's identity")
        let pairings = running.events.all.filter { if case .paired = $0 { true } else { false } }
        #expect(pairings.count == 1, "the reconnection did not pair again")

        try await phone.expect("listen", ["handle": Int(notify.valueHandle)])
        let centralID = CentralID(UInt16(truncatingIfNeeded: central.connectionID))
        #expect(await running.peripheral.clientConfigurations(of: centralID) == [cccd: 1])
        #expect(try await running.peripheral.updateValue([0x43], for: notify))
        let received = try await phone.expect("notifications", ["count": 1])
        #expect((received["values"] as? [[String: Any]])?.first?["value"] as? String == "43")
    }

    @Test func aSecondUnpairedPhoneCannotWriteTheOutput() async throws {
        let running = try await Self.start()
        defer { running.stop() }
        let output = running.handle(Self.outputUUID)
        let owner = try await running.connectedPhone()
        try await owner.expect("pair", ["io": "no_input_no_output"])
        try await owner.expect("write", ["handle": output, "value": "01"])

        let stranger = try await running.connectedPhone()
        // A central without a bond is not asked to pair: it pairs when an attribute says so.
        #expect(try await stranger.expect("security").int("security_requests") == 0)
        let refused = try await stranger.run("write", ["handle": output, "value": "00"])
        #expect(!refused.ok)
        #expect(refused.int("att_error") == Self.insufficientAuthentication)
        #expect(try await stranger.expect("read", ["handle": output]).string("value") == "01")

        // Encrypted but not bonded is still not enough for a bonded-only write.
        let paired = try await stranger.expect("pair", ["io": "no_input_no_output", "bonding": false])
        #expect(paired["encrypted"] as? Bool == true)
        let stillRefused = try await stranger.run("write", ["handle": output, "value": "00"])
        #expect(stillRefused.int("att_error") == Self.insufficientAuthentication)
        #expect(try await owner.expect("read", ["handle": output]).string("value") == "01")
    }
}
