import BluetoothATT
import BluetoothCore
import LoopClock
import Testing

@testable import BluetoothGATT

/// Per-central state across several PDUs: robust caching, indication flow and disconnects.
@Suite struct ServerStateTests {
    let central = CentralID(1)

    /// Robust caching (Vol 3 Part G 2.5.2.1): after a database change a client that enabled it is
    /// change-unaware; its commands are ignored, its first request gets Database Out Of Sync and
    /// the next is served (ATTServerTableTests has a row per request).
    @Test func aChangeUnawareClientGetsOneDatabaseOutOfSyncError() throws {
        let (server, _, _) = try Fixture.server()
        server.connect(central)
        #expect(server.exchange("120d0001").sent == ["13"], "enable robust caching")
        try server.addService(GATTService(uuid: BluetoothUUID(0xCCC0), characteristics: []), now: serverStart)
        _ = server.takeOutput()
        #expect(server.snapshot(of: central)?.isChangeAware == false)
        #expect(server.exchange("520300aa").sent.isEmpty, "commands are ignored while change-unaware")
        #expect(server.exchange("0a0300").sent == ["010a000012"])
        #expect(server.exchange("0a0300").sent == ["0b67617474776179"], "the next request is served")
        #expect(server.snapshot(of: central)?.isChangeAware == true)
    }

    /// Reading the Database Hash makes a change-unaware client change-aware (Vol 3 Part G 2.5.2.1,
    /// 7.3), with no Database Out Of Sync.
    @Test func readingTheDatabaseHashMakesAClientChangeAware() throws {
        let (server, _, _) = try Fixture.server()
        server.connect(central)
        _ = server.exchange("120d0001")
        try server.addService(GATTService(uuid: BluetoothUUID(0xCCC0), characteristics: []), now: serverStart)
        _ = server.takeOutput()
        let answer = server.exchange("080100ffff2a2b").sent
        #expect(answer == ["09120f00" + server.databaseHash.hexString])
        #expect(server.exchange("0a0300").sent == ["0b67617474776179"])
    }

    /// Only a client that set the Robust Caching bit becomes change-unaware (Vol 3 Part G 2.5.2.1,
    /// 7.2).
    @Test func clientsWithoutRobustCachingStayChangeAware() throws {
        let (server, _, _) = try Fixture.server()
        server.connect(central)
        try server.addService(GATTService(uuid: BluetoothUUID(0xCCC0), characteristics: []), now: serverStart)
        #expect(server.exchange("0a0300").sent == ["0b67617474776179"])
    }

    @Test func aFullIndicationQueueRefusesTheUpdateUntilAConfirmationFreesRoom() throws {
        let (server, _, services) = try Fixture.server(configuration: .init(indicationQueueLimit: 1))
        let tx = try #require(services[2].characteristic(Fixture.nordicTX))
        server.connect(central)
        _ = server.exchange("12220002 00".replacingOccurrences(of: " ", with: ""))
        server.addTransmitCredits(10, now: serverStart)
        #expect(try server.updateValue([1], for: tx, now: serverStart))
        #expect(try server.updateValue([2], for: tx, now: serverStart), "queued behind the outstanding one")
        #expect(try server.updateValue([3], for: tx, now: serverStart) == false, "the queue holds one")
        #expect(server.split(server.takeOutput()).sent == ["1d200001"])
        let (sent, events) = server.exchange("1e")
        #expect(sent == ["1d200002"])
        #expect(events == [.readyToUpdateSubscribers])
    }

    @Test func disconnectDiscardsPreparedWritesAndQueuedIndications() throws {
        let (server, log, services) = try Fixture.server()
        let tx = try #require(services[2].characteristic(Fixture.nordicTX))
        server.connect(central)
        _ = server.exchange("1222000200")
        _ = server.exchange("161a00000001")
        server.addTransmitCredits(10, now: serverStart)
        _ = try server.updateValue([1], for: tx, now: serverStart)
        _ = try server.updateValue([2], for: tx, now: serverStart)
        _ = server.takeOutput()
        server.disconnect(central)
        #expect(server.split(server.takeOutput()).events == [.unsubscribed(central, tx)])
        server.connect(central)
        let fresh = try #require(server.snapshot(of: central))
        #expect(fresh.preparedWriteCount == 0 && fresh.queuedIndicationCount == 0 && fresh.clientConfigurations.isEmpty)
        #expect(fresh.mtu == 23)
        #expect(server.exchange("1801").sent == ["19"])
        #expect(log.batches.isEmpty, "the prepared write died with the connection")
    }

    @Test func removingAServiceEndsItsSubscriptions() throws {
        let (server, _, services) = try Fixture.server()
        let level = try #require(services[3].characteristic(BluetoothUUID(0x2A19)))
        server.connect(central)
        _ = server.exchange("122e000100")
        try server.removeService(services[3].id, now: serverStart)
        #expect(server.split(server.takeOutput()).events == [.unsubscribed(central, level)])
        #expect(server.snapshot(of: central)?.clientConfigurations.isEmpty == true)
    }

    /// A reload's changes under one hold: a central that enabled Service Changed gets one
    /// indication over every handle changed (the battery service's 43–46 removed, a larger
    /// service added on 43–49), not one per service; a hold with no change sends nothing.
    @Test func heldServiceChangesAreIndicatedOnceOverEveryHandleChanged() throws {
        let (server, _, services) = try Fixture.server()
        server.connect(central)
        server.addTransmitCredits(10, now: serverStart)
        #expect(server.exchange("120b000200").sent == ["13"], "Service Changed indications enabled")
        server.holdServiceChanged()
        try server.removeService(services[3].id, now: serverStart)
        let fixed = (0..<3).map { index in
            GATTCharacteristic(
                uuid: BluetoothUUID(0xCCC1 + UInt16(index)), properties: .read, permissions: .readable, value: .fixed([1]))
        }
        let added = try server.addService(GATTService(uuid: BluetoothUUID(0xCCC0), characteristics: fixed), now: serverStart)
        #expect(added.handles == 43...49)
        #expect(server.split(server.takeOutput()).sent.isEmpty, "nothing while held")
        #expect(!server.awaitsServiceChangedConfirmation(central))
        server.releaseServiceChanged(now: serverStart)
        #expect(server.split(server.takeOutput()).sent == ["1d0a00" + "2b00" + "3100"])
        #expect(server.awaitsServiceChangedConfirmation(central))
        #expect(server.exchange("1e").sent.isEmpty, "confirmed")
        #expect(!server.awaitsServiceChangedConfirmation(central))
        server.holdServiceChanged()
        server.releaseServiceChanged(now: serverStart)
        #expect(server.takeOutput().isEmpty)
    }

    @Test func theTransactionTimeoutIsThirtySecondsOfServerTime() throws {
        let (server, _, services) = try Fixture.server()
        let tx = try #require(services[2].characteristic(Fixture.nordicTX))
        let start = serverStart
        server.connect(central)
        _ = server.exchange("1222000200")
        server.addTransmitCredits(1, now: start)
        _ = try server.updateValue([1], for: tx, now: start)
        #expect(server.nextTransactionDeadline == start + .seconds(30))
        server.expireTransactions(now: start + .seconds(29.999))
        #expect(server.split(server.takeOutput()).events.isEmpty)
        // A PDU arriving after the deadline finds the bearer already dead.
        let (sent, events) = server.exchange("0a0300", now: start + .seconds(30))
        #expect(sent.isEmpty)
        #expect(events == [.transactionTimedOut(central)])
        #expect(server.snapshot(of: central)?.isClosed == true)
        #expect(try server.updateValue([2], for: tx, now: start + .seconds(31)), "a dead bearer is no target")
        #expect(server.takeOutput().isEmpty)
    }
}
