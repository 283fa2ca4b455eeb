import BluetoothATT
import BluetoothCore
import Testing
@testable import BluetoothGATT

/// The transmit credits are shared; a central whose updates are not delivered (a stalled link)
/// holds at most `perCentralUpdateLimit` of them, and the others keep being served.
@Suite struct PerCentralUpdateLimitTests {
    @Test func aStalledCentralHoldsAtMostItsLimit() throws {
        let (server, _, services) = try Fixture.server(configuration: .init(perCentralUpdateLimit: 2))
        let heartRate = try #require(services[1].characteristic(BluetoothUUID(0x2A37)))
        let (stalled, other) = (CentralID(1), CentralID(2))
        for central in [stalled, other] {
            server.connect(central)
            _ = server.exchange("1217000100", from: central)
        }
        _ = server.takeOutput()
        server.addTransmitCredits(10, now: .now)
        func update(_ value: UInt8, to central: CentralID) throws -> Bool {
            try server.updateValue([value], for: heartRate, to: [central], now: .now)
        }
        #expect(try update(1, to: stalled))
        #expect(try update(2, to: stalled))
        #expect(try !update(3, to: stalled), "two undelivered: the stalled central is full")
        for value: UInt8 in 10..<16 {
            #expect(try update(value, to: other), "the other central still has the link")
            server.updatesDelivered(1, to: other, now: .now)
            server.addTransmitCredits(1, now: .now)
        }
        #expect(server.transmitCredits == 8, "the stalled central holds two credits, no more")
        #expect(try !update(3, to: stalled), "still full")
        // Its link moves again: room for it.
        server.updatesDelivered(2, to: stalled, now: .now)
        server.addTransmitCredits(2, now: .now)
        #expect(try update(4, to: stalled))
    }
}

/// The credits are reserved per central: three stalled centrals of eight hold their shares and
/// no more, and the five others are served every time.
@Suite struct ReservedCreditsTests {
    @Test func threeStalledCentralsOfEightLeaveTheOthersTheirShare() throws {
        let (server, _, services) = try Fixture.server()
        let heartRate = try #require(services[1].characteristic(BluetoothUUID(0x2A37)))
        let centrals = (1...8).map { CentralID(UInt16($0)) }
        for central in centrals {
            server.connect(central)
            _ = server.exchange("1217000100", from: central)
        }
        _ = server.takeOutput()
        server.addTransmitCredits(8, now: .now)
        func update(_ value: UInt8, to central: CentralID) throws -> Bool {
            try server.updateValue([value], for: heartRate, to: [central], now: .now)
        }
        let (stalled, healthy) = (centrals.prefix(3), centrals.dropFirst(3))
        for central in stalled {
            #expect(try update(1, to: central), "its share")
            #expect(try !update(2, to: central), "nothing beyond it while others have unused shares")
        }
        for round: UInt8 in 0..<10 {
            for central in healthy {
                #expect(try update(round, to: central), "round \(round): \(central) keeps its share")
                server.updatesDelivered(1, to: central, now: .now)
                server.addTransmitCredits(1, now: .now)
            }
        }
        #expect(server.transmitCredits == 5, "the stalled three hold one credit each")
    }
}
