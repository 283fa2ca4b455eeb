import Synchronization
import TestHarness
import Testing

@testable import MQTTClient
@testable import MQTTMirror
@testable import MQTTService

/// `BrokerConnection`: the live connection, why there is none, and each change reported once
/// (the end of an older connection and the end `stop()` asked for are no news).
@Suite struct BrokerConnectionTests {
    let reports = Recorded<String?>()

    func connection() -> BrokerConnection {
        BrokerConnection(client: nil, logger: testLogger, onChange: { [reports] change in reports.append(change) })
    }

    static let first = MQTTConnectionID(rawValue: 1)
    static let second = MQTTConnectionID(rawValue: 2)

    @Test func reportsEachConnectionFailureAndEnd() {
        let connection = connection()
        connection.failed(.connectionRefused(host: "broker", port: 1883))
        #expect(connection.lastError == "\(MQTTError.connectionRefused(host: "broker", port: 1883))")
        connection.connected(Self.first)
        #expect(connection.live == Self.first)
        #expect(connection.lastError == nil)
        let wasLive = connection.disconnected(Self.first, reason: "broker gone")
        #expect(wasLive)
        #expect(connection.live == nil)
        #expect(connection.lastError == "broker gone")
        #expect(
            reports.all == [
                "\(MQTTError.connectionRefused(host: "broker", port: 1883)); retrying", nil, "broker gone; reconnecting"
            ])
    }

    @Test func theEndOfAnOlderConnectionIsNoNews() {
        let connection = connection()
        connection.connected(Self.second)
        let wasLive = connection.disconnected(Self.first, reason: "old one")
        #expect(!wasLive)
        #expect(connection.live == Self.second)
        #expect(connection.lastError == nil)
        #expect(reports.all == [nil])
    }

    @Test func theEndAStopAskedForIsNotReported() {
        let connection = connection()
        connection.connected(Self.first)
        connection.stopping()
        let wasLive = connection.disconnected(Self.first, reason: "stopped")
        #expect(wasLive)
        #expect(connection.lastError == "stopped")
        #expect(reports.all == [nil])
    }

    @Test func withoutAClientNothingIsSentAndTheBrokerIsNeverBehind() {
        let connection = connection()
        connection.connected(Self.first)
        #expect(connection.publishReportingDelivery(MQTTMessage(topic: "t", text: "x")) == nil)
        #expect(!connection.isBehind)
        #expect(connection.brokerAddress == "(no connection)")
    }
}
