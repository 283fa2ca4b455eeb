import BluetoothATT
import BluetoothCore
import Testing

@testable import BluetoothGATT

/// The transmit credits are shared; a central whose updates are not delivered (a stalled link)
/// holds at most `perCentralUpdateLimit` of them, and the others keep being served.
@Suite struct PerCentralUpdateLimitTests {
    @Test func aStalledCentralHoldsAtMostItsLimit() throws {
        let (stalled, other) = (CentralID(1), CentralID(2))
        let (server, update) = try Fixture.subscribedToHeartRate(
            [stalled, other], credits: 10,
            configuration: .init(perCentralUpdateLimit: 2))
        #expect(try update(1, stalled))
        #expect(try update(2, stalled))
        #expect(try !update(3, stalled), "two undelivered: the stalled central is full")
        for value: UInt8 in 10..<16 {
            #expect(try update(value, other), "the other central still has the link")
            server.updatesDelivered(1, to: other, now: serverStart)
        }
        #expect(server.transmitCredits == 8, "the stalled central holds two credits, no more")
        #expect(try !update(3, stalled), "still full")
        // Its link moves again: room for it.
        server.updatesDelivered(2, to: stalled, now: serverStart)
        #expect(try update(4, stalled))
    }
}

/// The credits are reserved per central: three stalled centrals of eight hold their shares and
/// no more, and the five others are served every time.
@Suite struct ReservedCreditsTests {
    @Test func threeStalledCentralsOfEightLeaveTheOthersTheirShare() throws {
        let centrals = (1...8).map { CentralID(UInt16($0)) }
        let (server, update) = try Fixture.subscribedToHeartRate(centrals, credits: 8)
        let (stalled, healthy) = (centrals.prefix(3), centrals.dropFirst(3))
        for central in stalled {
            #expect(try update(1, central), "its share")
            #expect(try !update(2, central), "nothing beyond it while others have unused shares")
        }
        for round: UInt8 in 0..<10 {
            for central in healthy {
                #expect(try update(round, central), "round \(round): \(central) keeps its share")
                server.updatesDelivered(1, to: central, now: serverStart)
            }
        }
        #expect(server.transmitCredits == 5, "the stalled three hold one credit each")
    }
}

extension Fixture {
    /// The test server with `centrals` connected and subscribed to Heart Rate Measurement
    /// notifications, `credits` transmit credits, and a function sending one value to one central.
    static func subscribedToHeartRate(
        _ centrals: [CentralID], credits: Int,
        configuration: GATTServer.Configuration = .init()
    ) throws
        -> (GATTServer, (UInt8, CentralID) throws -> Bool)
    {
        let (server, heartRate) = try heartRateSubscribed(centrals, credits: credits, configuration: configuration)
        return (server, { value, central in try server.updateValue([value], for: heartRate, to: [central], now: serverStart) })
    }

    /// The test server with `centrals` connected and subscribed to Heart Rate Measurement
    /// notifications and `credits` transmit credits, and that characteristic.
    static func heartRateSubscribed(
        _ centrals: [CentralID], credits: Int,
        configuration: GATTServer.Configuration = .init()
    ) throws -> (GATTServer, PublishedCharacteristic) {
        let (server, _, services) = try server(configuration: configuration)
        let heartRate = try #require(services[1].characteristic(BluetoothUUID(0x2A37)))
        for central in centrals {
            server.connect(central)
            _ = server.exchange("1217000100", from: central)
        }
        _ = server.takeOutput()
        server.addTransmitCredits(credits, now: serverStart)
        return (server, heartRate)
    }
}
