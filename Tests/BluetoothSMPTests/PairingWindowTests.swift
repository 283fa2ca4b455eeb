import BluetoothCore
import TestHarness
import Testing

@testable import BluetoothSMP

/// The pairing window: when it is open (pure, time passed in), and the Security Manager refusing
/// Pairing Requests outside it while bonded centrals still encrypt.
@Suite struct PairingWindowTests {
    typealias Flow = PairingFlowTests

    @Test func aWindowIsOpenFromItsOpeningUntilItsEnd() {
        var window = PairingWindow(policy: .window)
        #expect(!window.isOpen(at: .zero) && window.deadline == nil, "closed until the owner opens it")
        window.open(for: .seconds(120), at: .seconds(10))
        #expect(window.isOpen(at: .seconds(10)) && window.isOpen(at: .seconds(129)))
        #expect(!window.isOpen(at: .seconds(130)), "closed at its end")
        #expect(window.remaining(at: .seconds(100)) == .seconds(30))
        #expect(window.remaining(at: .seconds(130)) == nil)
        #expect(window.deadline == .seconds(130))
        #expect(!window.expire(at: .seconds(129)) && window.deadline == .seconds(130), "not yet")
        #expect(window.expire(at: .seconds(130)) && window.deadline == nil, "closed once, by its timer")
        let expiredAgain = window.expire(at: .seconds(131))
        #expect(!expiredAgain)
        window.open(for: .seconds(60), at: .seconds(200))
        window.open(for: .seconds(5), at: .seconds(201))
        #expect(window.deadline == .seconds(206), "the last opening says how long")
        #expect(window.close() && !window.isOpen(at: .seconds(202)))
        let closedAgain = window.close()
        #expect(!closedAgain, "already closed")
    }

    @Test func anOpenPolicyIsAlwaysOpenAndSchedulesNothing() {
        var window = PairingWindow(policy: .open)
        #expect(window.isOpen(at: .zero) && window.isOpen(at: .seconds(1_000_000)))
        window.open(for: .seconds(60), at: .zero)
        #expect(window.deadline == nil && window.remaining(at: .zero) == nil)
    }

    static func windowed() throws -> Gateway {
        Flow.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput, pairing: .window))
    }

    /// Outside the window: Pairing Failed with Pairing Not Supported (Vol 3 Part H 3.5.5), a
    /// `pairingRefused` event, counted; no back-off, so the refusal stays the same.
    @Test func aPairingRequestOutsideTheWindowIsRefusedWithPairingNotSupported() throws {
        let manager = try Self.windowed()
        let central = Flow.central(Flow.features(io: .noInputNoOutput))
        for attempt in 1...2 {
            let actions = manager.receive(central.pairingRequest.encoded, on: Flow.handle, now: .seconds(attempt))
            #expect(
                actions == [
                    .send(Flow.handle, .pairingFailed(.pairingNotSupported)),
                    .event(.pairingRefused(Flow.handle, peer: Flow.centralAddress))
                ])
            #expect(manager.manager.refusedPairings == attempt)
        }
        #expect(!manager.isPairing(on: Flow.handle))
        #expect(manager.requestSecurity(on: Flow.handle, authenticated: false, now: .seconds(3)).isEmpty, "not asked to pair")
    }

    /// Inside the window a new central pairs; once the window's time is up (the manager's timer)
    /// a new central is refused while the bonded one still gets its key and is asked to encrypt.
    @Test func aCentralPairsInsideTheWindowAndKeepsItsBondAfterIt() throws {
        let manager = try Self.windowed()
        manager.manager.openPairingWindow(for: .seconds(60), now: .zero)
        #expect(manager.nextDeadline == .seconds(60))
        var central = Flow.central(Flow.features(io: .noInputNoOutput))
        let outcome = try Flow.pairJustWorks(manager, &central)
        let bond = try #require(outcome.bond)
        #expect(manager.expireTimers(now: .seconds(59)).isEmpty)
        #expect(manager.expireTimers(now: .seconds(60)) == [.event(.pairingWindowClosed)])
        #expect(manager.nextDeadline == nil)

        let stranger = BluetoothAddress("C0:99:88:77:66:55", kind: .random)!
        manager.connectionOpened(0x41, peer: stranger, local: Flow.gatewayAddress)
        let other = Flow.central(Flow.features(io: .noInputNoOutput), seed: 7, address: stranger)
        #expect(
            manager.receive(other.pairingRequest.encoded, on: 0x41, now: .seconds(61)).first
                == .send(0x41, .pairingFailed(.pairingNotSupported)))

        manager.connectionClosed(Flow.handle)
        manager.connectionOpened(0x42, peer: Flow.centralAddress, local: Flow.gatewayAddress)
        #expect(
            manager.requestSecurity(on: 0x42, authenticated: false, now: .seconds(62))
                == [.send(0x42, .securityRequest([.bonding, .secureConnections]))],
            "a bonded central is asked to encrypt, window or not")
        #expect(manager.longTermKeyRequest(on: 0x42, ediv: 0, rand: 0) == bond.longTermKey)
        _ = manager.encryptionChanged(on: 0x42, enabled: true, now: .seconds(62))
        #expect(manager.linkEncryption(on: 0x42)?.bonded == true)
    }

    @Test func withPairingOpenEveryRequestIsTaken() throws {
        let manager = Flow.manager(try SecurityConfiguration(ioCapability: .noInputNoOutput, pairing: .open))
        var central = Flow.central(Flow.features(io: .noInputNoOutput))
        #expect(try Flow.pairJustWorks(manager, &central).bond != nil)
        #expect(manager.manager.refusedPairings == 0)
    }
}
