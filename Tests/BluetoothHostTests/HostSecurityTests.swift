import BluetoothCore
import BluetoothGATT
import BluetoothHCI
import BluetoothL2CAP
import BluetoothSMP
import Foundation
import TestHarness
import Testing

@testable import BluetoothHost

/// The host's side of encryption against `FakeController`, without sockets: LE Long Term Key
/// Requests answered from the bond store, Encryption Change turned into the GATT server's link
/// security, and a bonded central's CCCD values restored and persisted.
@Suite(.timeLimit(.minutes(1)))
struct HostSecurityTests {
    static let phone = BluetoothAddress("D0:11:22:33:44:55", kind: .random)!
    static let key = SecretKey(mostSignificantFirst: (0..<16).map { UInt8(0xC0 + $0) })

    /// A state directory holding one bond for `phone` (Secure Connections key, EDIV = Rand = 0)
    /// with two subscriptions, made on a database with `databaseHash`.
    static func stateDirectoryWithBond(databaseHash: [UInt8]? = nil) throws -> (String, BondStore) {
        let directory = try temporaryDirectory("host-security").path
        let store = BondStore(directory: directory)
        try store.save(
            BondRegistry([
                Bond(
                    identity: phone,
                    longTermKey: LongTermKey(key: key, keySize: 16, authenticated: true, secureConnections: true),
                    clientConfigurations: [12: 1, 15: 2], databaseHash: databaseHash)
            ]))
        return (directory, store)
    }

    /// The bond file's Database Hash once the host wrote `expected` (it saves right after the
    /// server restored the subscriptions), or what it holds after two seconds.
    static func storedHash(_ store: BondStore, expected: [UInt8] = Array(repeating: 0x22, count: 16)) async throws -> [UInt8]? {
        for _ in 0..<200 {
            if try store.load().bonds.first?.databaseHash == expected { return expected }
            try await Task.sleep(for: .milliseconds(10))
        }
        return try store.load().bonds.first?.databaseHash
    }

    /// Connects the bonded `phone` and has it encrypt with its key; returns its `restored` event.
    static func encryptBonded(_ rig: PeripheralHostTests.Rig, _ controller: FakeController) async throws -> ServerEvent? {
        _ = try await connect(rig, controller)
        controller.inject(.event(.le(.longTermKeyRequest(handle: 0x40, rand: 0, ediv: 0))))
        _ = await command(controller, .leLongTermKeyRequestReply)
        controller.inject(.event(.encryptionChange(status: .success, handle: 0x40, enabled: true)))
        return await rig.server.events.first(matching: { if case .restored = $0 { true } else { false } })
    }

    /// The first command with `opcode` the host sends.
    static func command(_ controller: FakeController, _ opcode: HCIOpcode) async -> HCICommand? {
        for await packet in controller.sent {
            if case .command(let command) = packet, command.opcode == opcode { return command }
        }
        return nil
    }

    static func connect(_ rig: PeripheralHostTests.Rig, _ controller: FakeController) async throws -> Central {
        _ = await PeripheralHostTests.commands(controller, until: .leSetAdvertisingEnable)
        controller.connect(handle: 0x40, peer: phone)
        guard
            case .connected(let central) = await rig.server.events.first(matching: {
                if case .connected = $0 { true } else { false }
            })
        else { throw HostError("no connection") }
        return central
    }

    @Test func aBondedCentralEncryptsWithItsStoredKeyAndGetsItsSubscriptionsBack() async throws {
        let (directory, store) = try Self.stateDirectoryWithBond()
        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        let central = try await Self.connect(rig, controller)
        // Known but not encrypted yet: a bonded-only attribute answers Insufficient Encryption.
        #expect(
            await rig.server.events.first(matching: { if case .security = $0 { true } else { false } })
                == .security(LinkSecurity(isEncrypted: false, encryptionKeySize: 0, bondExists: true), central))

        controller.inject(.event(.le(.longTermKeyRequest(handle: 0x40, rand: 0, ediv: 0))))
        #expect(
            await Self.command(controller, .leLongTermKeyRequestReply)
                == .leLongTermKeyRequestReply(handle: 0x40, littleEndianKey: Self.key.littleEndianBytes))

        controller.inject(.event(.encryptionChange(status: .success, handle: 0x40, enabled: true)))
        #expect(
            await rig.server.events.first(matching: { if case .security = $0 { true } else { false } })
                == .security(
                    LinkSecurity(
                        isEncrypted: true, isAuthenticated: true, encryptionKeySize: 16,
                        isBonded: true), central))
        #expect(
            await rig.server.events.first(matching: { if case .restored = $0 { true } else { false } })
                == .restored([12: 1, 15: 2], central, databaseChanged: false))

        // The central unsubscribes from one and subscribes to another: the bond file follows.
        rig.server.setClientConfigurations([12: 1, 18: 1], for: central)
        controller.receive(L2CAPChannel.att, [0x12, 0x10, 0x00, 0x00, 0x00], on: 0x40)
        controller.receive(L2CAPChannel.att, [0x0A, 0x01, 0x00], on: 0x40)
        // PDUs are handled one at a time: once the second arrived, the first was handed to the
        // state files' writer.
        _ = await rig.server.events.first(matching: { $0 == .pdu([0x0A, 0x01, 0x00], central) })
        await rig.writer.idle()
        #expect(try store.load().bonds.first?.clientConfigurations == [12: 1, 18: 1])
        #expect(await rig.host.bonds.bonds.first?.clientConfigurations == [12: 1, 18: 1])
    }

    @Test func aBondedCentralOnAResolvablePrivateAddressIsRecognisedThroughItsIRK() async throws {
        let directory = try temporaryDirectory("host-security").path
        let irk = SecretKey(mostSignificantFirst: (0..<16).map { UInt8(0x70 + $0) })
        let identity = BluetoothAddress("00:1B:DC:07:32:EF")!
        try BondStore(directory: directory).save(
            BondRegistry([
                Bond(
                    identity: identity,
                    longTermKey: LongTermKey(key: Self.key, keySize: 16, authenticated: false, secureConnections: true),
                    peerIdentityResolvingKey: irk, clientConfigurations: [12: 1])
            ]))
        // A fresh resolvable private address of that IRK (Vol 6 Part B 1.3.2.2): prand || ah(IRK, prand).
        let prand: [UInt8] = [0x4A, 0x12, 0x34]
        let hash = try SecurityToolbox.ah(irk: irk.bytes, prand: prand)
        let address = BluetoothAddress(littleEndianBytes: hash.reversed() + prand.reversed(), kind: .random)
        #expect(address.isResolvablePrivate)

        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        _ = await PeripheralHostTests.commands(controller, until: .leSetAdvertisingEnable)
        controller.connect(handle: 0x41, peer: address)
        controller.inject(.event(.le(.longTermKeyRequest(handle: 0x41, rand: 0, ediv: 0))))
        #expect(
            await Self.command(controller, .leLongTermKeyRequestReply)
                == .leLongTermKeyRequestReply(handle: 0x41, littleEndianKey: Self.key.littleEndianBytes))
        controller.inject(.event(.encryptionChange(status: .success, handle: 0x41, enabled: true)))
        guard
            case .restored(let restored, let central, _) = await rig.server.events.first(matching: {
                if case .restored = $0 { true } else { false }
            })
        else { return }
        #expect(restored == [12: 1])
        #expect(central.address == address)
    }

    /// gattway restarted with another layout: the bond's CCCD handles may now belong to other
    /// characteristics, so the server is told the database changed (it indicates Service Changed
    /// instead of restoring them), and the bond then records the hash the central knows now.
    @Test func aBondMadeOnAnotherDatabaseIsToldItChangedAndRecordsTheNewHash() async throws {
        let old = Array(repeating: UInt8(0x11), count: 16)
        let (directory, store) = try Self.stateDirectoryWithBond(databaseHash: old)
        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        let current = Array(repeating: UInt8(0x22), count: 16)
        rig.server.setDatabaseHash(current)
        guard case .restored(let configurations, _, let changed) = try await Self.encryptBonded(rig, controller) else {
            Issue.record("nothing restored")
            return
        }
        #expect(changed)
        #expect(configurations == [12: 1, 15: 2], "the server picks what survives a change")
        #expect(try await Self.storedHash(store) == current)
    }

    /// A bonded central's Client Supported Features: those it writes go to its bond, and come back
    /// to the server with its subscriptions on its next connection.
    @Test func clientSupportedFeaturesAreKeptWithTheBond() async throws {
        let current = Array(repeating: UInt8(0x22), count: 16)
        let (directory, store) = try Self.stateDirectoryWithBond(databaseHash: current)
        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        rig.server.setDatabaseHash(current)
        guard case .restored = try await Self.encryptBonded(rig, controller) else {
            Issue.record("nothing restored")
            return
        }
        #expect(rig.server.lastRestoredFeatures == 0, "none written yet")
        rig.server.setClientSupportedFeatures(0x01)
        controller.receive(L2CAPChannel.att, [0x12, 0x0D, 0x00, 0x01], on: 0x40)
        controller.receive(L2CAPChannel.att, [0x0A, 0x01, 0x00], on: 0x40)
        _ = await rig.server.events.first(matching: { if case .pdu([0x0A, 0x01, 0x00], _) = $0 { true } else { false } })
        await rig.writer.idle()
        #expect(try store.load().bonds.first?.clientSupportedFeatures == 0x01)
        rig.task.cancel()

        let again = FakeController()
        let restarted = try PeripheralHostTests.start([again], stateDirectory: directory)
        defer { restarted.task.cancel() }
        restarted.server.setDatabaseHash(current)
        guard case .restored = try await Self.encryptBonded(restarted, again) else {
            Issue.record("nothing restored after the restart")
            return
        }
        #expect(restarted.server.lastRestoredFeatures == 0x01)
    }

    /// The central told the database changed has not confirmed Service Changed yet: its bond
    /// keeps the hash it had (were it to leave now, it would be told again when it comes back),
    /// and records the new one at its first ATT PDU after the confirmation.
    @Test func theNewHashIsRecordedOnceServiceChangedIsConfirmed() async throws {
        let old = Array(repeating: UInt8(0x11), count: 16)
        let (directory, store) = try Self.stateDirectoryWithBond(databaseHash: old)
        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        let current = Array(repeating: UInt8(0x22), count: 16)
        rig.server.setDatabaseHash(current)
        rig.server.setAwaitsServiceChangedConfirmation(true)
        guard case .restored(_, _, true) = try await Self.encryptBonded(rig, controller) else {
            Issue.record("not told the database changed")
            return
        }
        controller.receive(L2CAPChannel.att, [0x0A, 0x01, 0x00], on: 0x40)
        _ = await rig.server.events.first(matching: { if case .pdu([0x0A, 0x01, 0x00], _) = $0 { true } else { false } })
        try await Task.sleep(for: .milliseconds(200))
        #expect(try store.load().bonds.first?.databaseHash == old, "not confirmed yet")
        rig.server.setAwaitsServiceChangedConfirmation(false)
        controller.receive(L2CAPChannel.att, [0x1E], on: 0x40)
        #expect(try await Self.storedHash(store) == current)
    }

    @Test func aBondMadeOnTheSameDatabaseGetsItsSubscriptionsAndABondWithoutAHashRecordsOne() async throws {
        let current = Array(repeating: UInt8(0x22), count: 16)
        for stored in [current, nil] {
            let (directory, store) = try Self.stateDirectoryWithBond(databaseHash: stored)
            let controller = FakeController()
            let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
            defer { rig.task.cancel() }
            rig.server.setDatabaseHash(current)
            let restored = try await Self.encryptBonded(rig, controller)
            guard case .restored(let configurations, _, let changed) = restored else {
                Issue.record("nothing restored")
                return
            }
            #expect(!changed)
            #expect(configurations == [12: 1, 15: 2])
            #expect(try await Self.storedHash(store) == current)
        }
    }

    @Test func anUnknownKeyGetsTheNegativeReplyAndTheLinkStaysUnencrypted() async throws {
        let (directory, store) = try Self.stateDirectoryWithBond()
        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        _ = try await Self.connect(rig, controller)
        // The bond's key has EDIV = Rand = 0; a request for another key has no answer.
        controller.inject(.event(.le(.longTermKeyRequest(handle: 0x40, rand: 0x1122, ediv: 7))))
        #expect(
            await Self.command(controller, .leLongTermKeyRequestNegativeReply)
                == .leLongTermKeyRequestNegativeReply(handle: 0x40))
        controller.inject(.event(.encryptionChange(status: HCIStatus(rawValue: 0x06), handle: 0x40, enabled: false)))
        // An unencrypted central's CCCD writes never touch the bond.
        controller.receive(L2CAPChannel.att, [0x12, 0x10, 0x00, 0x01, 0x00], on: 0x40)
        controller.receive(L2CAPChannel.att, [0x0A, 0x01, 0x00], on: 0x40)
        _ = await rig.server.events.first(matching: { if case .pdu([0x0A, 0x01, 0x00], _) = $0 { true } else { false } })
        #expect(try store.load().bonds.first?.clientConfigurations == [12: 1, 15: 2])
    }

    /// The SMP replies the host sends on `handle`, until `count` of them.
    static func smpReplies(_ controller: FakeController, count: Int) async -> [[UInt8]] {
        var replies: [[UInt8]] = []
        for await packet in controller.sent {
            if case .acl(let acl) = packet, acl.data.count >= 4, acl.data[2] == 0x06 {
                replies.append(Array(acl.data[4...]))
                if replies.count == count { break }
            }
        }
        return replies
    }

    @Test func aPasskeyToTypeOnGattwayIsRefusedWithPasskeyEntryFailed() async throws {
        let controller = FakeController()
        let rig = try PeripheralHostTests.start(
            [controller],
            security: try SecurityConfiguration(
                ioCapability: .keyboardOnly,
                fixedPasskey: 123_456))
        defer { rig.task.cancel() }
        _ = try await Self.connect(rig, controller)
        // A display-only central asking for MITM with Secure Connections: it shows the passkey,
        // gattway would have to type it.
        controller.receive(L2CAPChannel.securityManager, [0x01, 0x00, 0x00, 0x0D, 0x10, 0x02, 0x02], on: 0x40)
        let replies = await Self.smpReplies(controller, count: 2)
        #expect(replies.first?.first == 0x02, "Pairing Response")
        #expect(replies.last == [0x05, 0x01], "Pairing Failed, Passkey Entry Failed")
        let failed = try await rig.events.next { if case .pairingFailed = $0 { true } else { false } }
        guard case .pairingFailed(_, let reason) = failed else { return }
        #expect(reason.contains("Passkey Entry Failed"))
    }

    @Test func aMalformedBondFileIsLeftAloneAndPairingIsStillAnswered() async throws {
        let directory = try temporaryDirectory("host-security").path
        let path = directory + "/" + BondStore.fileName
        try "not json".write(toFile: path, atomically: false, encoding: .utf8)
        let controller = FakeController()
        let rig = try PeripheralHostTests.start([controller], stateDirectory: directory)
        defer { rig.task.cancel() }
        _ = try await Self.connect(rig, controller)
        // A legacy Pairing Request (no Secure Connections bit): Pairing Failed, Authentication
        // Requirements, on the Security Manager channel.
        controller.receive(L2CAPChannel.securityManager, [0x01, 0x03, 0x00, 0x01, 0x10, 0x07, 0x07], on: 0x40)
        #expect(await Self.smpReplies(controller, count: 1) == [[0x05, 0x03]])
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "not json")
    }
}
