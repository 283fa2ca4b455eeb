import BluetoothATT
import BluetoothCore
import Foundation
import Testing

@testable import BluetoothGATT

/// gattway's `bonded` permission and the restoring of a bonded central's subscriptions.
@Suite struct BondedSecurityTests {
    static let service = GATTService(
        uuid: BluetoothUUID(0xFFE0),
        characteristics: [
            GATTCharacteristic(
                uuid: BluetoothUUID(0xFFE1), properties: [.read, .write],
                permissions: [
                    .readEncryptionRequired, .readBondingRequired,
                    .writeEncryptionRequired, .writeBondingRequired
                ],
                value: .dynamic),
            GATTCharacteristic(
                uuid: BluetoothUUID(0xFFE2), properties: [.read, .notify], permissions: .readable,
                value: .dynamic),
            GATTCharacteristic(
                uuid: BluetoothUUID(0xFFE3), properties: [.read, .indicate], permissions: .readable,
                value: .dynamic)
        ])

    static func server() throws -> (GATTServer, PublishedService) {
        let server = GATTServer(handlers: GATTRequestHandlers(read: { _ in .success([0x07]) }, write: { _ in nil }))
        let published = try server.addService(service, now: serverStart)
        return (server, published)
    }

    /// The answer to one request from central 1 on a link with `security`.
    static func answer(_ request: [UInt8], _ security: LinkSecurity) throws -> [UInt8] {
        let (server, _) = try server()
        let central = CentralID(1)
        server.connect(central, security: security)
        _ = server.takeOutput()
        server.receive(request, from: central, now: serverStart)
        for case .send(let pdu, _) in server.takeOutput() { return pdu }
        return []
    }

    static let unknown = LinkSecurity.unencrypted
    static let bondedNotEncrypted = LinkSecurity(isEncrypted: false, encryptionKeySize: 0, bondExists: true)
    static let encryptedNotBonded = LinkSecurity(isEncrypted: true, isAuthenticated: true)
    static let bonded = LinkSecurity(isEncrypted: true, isBonded: true)

    static let cases: [(String, LinkSecurity, UInt8?)] = [
        // No key for this central: pair (Insufficient Authentication, Vol 3 Part C 10.3.2).
        ("no bond, not encrypted", unknown, 0x05),
        // A key exists: encrypt with it (Insufficient Encryption).
        ("bonded central, not encrypted yet", bondedNotEncrypted, 0x0F),
        // Encrypted with a key not stored in a bond, even an authenticated one: pair again.
        ("encrypted, not bonded", encryptedNotBonded, 0x05),
        ("encrypted with the bond's key", bonded, nil)
    ]

    @Test(arguments: cases)
    func bondedReadsAndWritesNeedAnEncryptedBondedLink(name: String, security: LinkSecurity, error: UInt8?) throws {
        let (_, published) = try Self.server()
        let handle = published.characteristics[0].valueHandle
        let read = try Self.answer([0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8)], security)
        let write = try Self.answer([0x12, UInt8(handle & 0xFF), UInt8(handle >> 8), 0x01], security)
        if let error {
            #expect(read == [0x01, 0x0A, UInt8(handle & 0xFF), UInt8(handle >> 8), error], "\(name)")
            #expect(write == [0x01, 0x12, UInt8(handle & 0xFF), UInt8(handle >> 8), error], "\(name)")
        } else {
            #expect(read == [0x0B, 0x07], "\(name)")
            #expect(write == [0x13], "\(name)")
        }
    }

    @Test func restoredSubscriptionsComeBackWithEventsAndSkipWhatNoLongerFits() throws {
        let (server, published) = try Self.server()
        let notify = published.characteristics[1]
        let indicate = published.characteristics[2]
        let central = CentralID(3)
        server.connect(central)
        _ = server.takeOutput()
        let notifyCCCD = try #require(notify.clientConfigurationHandle)
        let indicateCCCD = try #require(indicate.clientConfigurationHandle)
        server.restoreClientConfigurations(
            [
                notifyCCCD: 0x0001,
                indicateCCCD: 0x0001,  // notify bits on an indicate-only characteristic
                notify.valueHandle: 0x0001,  // not a CCCD (the database changed since)
                0x0F00: 0x0002  // no such attribute
            ], for: central, now: serverStart)
        #expect(server.takeOutput() == [.event(.subscribed(central, notify))])
        #expect(server.snapshot(of: central)?.clientConfigurations == [notifyCCCD: 0x0001])
        // The restored subscription is live: an update reaches the central.
        server.addTransmitCredits(1, now: serverStart)
        #expect(try server.updateValue([0x09], for: notify, now: serverStart))
        #expect(
            server.takeOutput() == [
                .sendUpdate(ATTUpdate(.notification, handle: notify.valueHandle, value: [0x09]), to: central)
            ])
    }

    /// A bonded central's Client Supported Features come back with its bond (Vol 3 Part G 7.2):
    /// with robust caching and the database changed since, it is change-unaware (2.5.2.1): its
    /// first request gets Database Out Of Sync, the next is served; with the same database, it
    /// stays change-aware.
    @Test func restoredRobustCachingMakesACentralChangeUnawareOfAChangedDatabase() throws {
        let (server, _) = try Self.server()
        let central = CentralID(6)
        server.connect(central)
        server.restoreClientConfigurations([:], clientSupportedFeatures: 0x01, for: central, databaseChanged: true, now: serverStart)
        _ = server.takeOutput()
        #expect(server.clientSupportedFeatures(of: central) == 0x01)
        #expect(server.snapshot(of: central)?.isChangeAware == false)
        #expect(server.exchange("0a0300", from: central).sent == ["010a000012"])
        #expect(server.exchange("0a0300", from: central).sent == ["0b67617474776179"])

        let unchanged = CentralID(7)
        server.connect(unchanged)
        server.restoreClientConfigurations([:], clientSupportedFeatures: 0x01, for: unchanged, now: serverStart)
        #expect(server.clientSupportedFeatures(of: unchanged) == 0x01)
        #expect(server.snapshot(of: unchanged)?.isChangeAware == true)
    }

    /// A bond made on another database (gattway restarted with another layout): its CCCD handles
    /// may belong to other characteristics now, so only the Service Changed subscription (the GATT
    /// service's handles, 0x0008-0x000F, never move) comes back, and the central is told every
    /// handle changed (Vol 3 Part G 2.5.2) so that it discovers again.
    @Test func aBondFromAnotherDatabaseKeepsOnlyServiceChangedAndIsToldEveryHandleChanged() throws {
        let (server, published) = try Self.server()
        let notify = published.characteristics[1]
        let central = CentralID(4)
        server.connect(central)
        _ = server.takeOutput()
        let serviceChangedValue: UInt16 = 0x000A
        let serviceChangedCCCD: UInt16 = 0x000B
        let notifyCCCD = try #require(notify.clientConfigurationHandle)
        server.addTransmitCredits(1, now: serverStart)
        server.restoreClientConfigurations(
            [serviceChangedCCCD: 0x0002, notifyCCCD: 0x0001], for: central, databaseChanged: true, now: serverStart)
        let output = server.takeOutput()
        #expect(output.count == 2)
        if case .event(.subscribed(central, let characteristic)) = output.first {
            #expect(characteristic.uuid == .serviceChanged)
        } else {
            Issue.record("no subscribed event for Service Changed: \(output)")
        }
        #expect(
            output.last
                == .sendUpdate(ATTUpdate(.indication, handle: serviceChangedValue, value: [0x01, 0x00, 0xFF, 0xFF]), to: central))
        #expect(server.snapshot(of: central)?.clientConfigurations == [serviceChangedCCCD: 0x0002])

        // Without the Service Changed subscription there is nothing to indicate, and nothing comes back.
        let other = CentralID(5)
        server.connect(other)
        _ = server.takeOutput()
        server.restoreClientConfigurations([notifyCCCD: 0x0001], for: other, databaseChanged: true, now: serverStart)
        #expect(server.takeOutput().isEmpty)
        #expect(server.snapshot(of: other)?.clientConfigurations == [:])
    }
}
