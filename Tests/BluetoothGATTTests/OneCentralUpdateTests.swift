import BluetoothATT
import BluetoothCore
import Testing

@testable import BluetoothGATT

/// `updateValue(_:for:toCentral:now:)`, the notify driver's call: a notification comes back to
/// the caller to send, with its credit taken; anything else goes the general way.
@Suite struct OneCentralUpdateTests {
    let central = CentralID(1)

    @Test func aNotificationComesBackWithItsCreditTakenAndNothingInTheOutput() throws {
        let (server, heartRate) = try Fixture.heartRateSubscribed([central], credits: 3)
        #expect(
            try server.updateValue([0x07], for: heartRate, toCentral: central, now: serverStart)
                == .notification(ATTUpdate(.notification, handle: heartRate.valueHandle, value: [0x07])))
        #expect(server.transmitCredits == 2)
        #expect(server.takeOutput().isEmpty, "the caller sends it: it is not in the output as well")
    }

    @Test func aValueLongerThanTheMTUAllowsIsTruncated() throws {
        let (server, heartRate) = try Fixture.heartRateSubscribed([central], credits: 3)
        let value = [UInt8](repeating: 0xAB, count: 40)
        // The default ATT_MTU of 23 leaves 20 bytes for the value.
        #expect(
            try server.updateValue(value, for: heartRate, toCentral: central, now: serverStart)
                == .notification(ATTUpdate(.notification, handle: heartRate.valueHandle, value: Array(value.prefix(20)))))
    }

    @Test func aCentralWithoutRoomIsRefusedAndToldWhenRoomFrees() throws {
        let (server, heartRate) = try Fixture.heartRateSubscribed(
            [central], credits: 3, configuration: .init(perCentralUpdateLimit: 1))
        #expect(try server.updateValue([1], for: heartRate, toCentral: central, now: serverStart) != .refused)
        #expect(
            try server.updateValue([2], for: heartRate, toCentral: central, now: serverStart) == .refused,
            "one undelivered: the central is full")
        #expect(server.transmitCredits == 2, "a refused value takes no credit")
        server.updatesDelivered(1, to: central, now: serverStart)
        #expect(server.split(server.takeOutput()).events == [.readyToUpdateSubscribers])
    }

    @Test func aCentralNotSubscribedGetsNothing() throws {
        let (server, heartRate) = try Fixture.heartRateSubscribed([central], credits: 3)
        let other = CentralID(2)
        server.connect(other)
        #expect(try server.updateValue([1], for: heartRate, toCentral: other, now: serverStart) == .handled)
        #expect(
            try server.updateValue([1], for: heartRate, toCentral: CentralID(9), now: serverStart) == .handled,
            "not connected")
        #expect(server.transmitCredits == 3)
        #expect(server.takeOutput().isEmpty)
    }

    @Test func anIndicationGoesOutThroughTheOutput() throws {
        let (server, _, services) = try Fixture.server()
        let tx = try #require(services[2].characteristic(Fixture.nordicTX))
        server.connect(central)
        _ = server.exchange("1222000200")
        server.addTransmitCredits(3, now: serverStart)
        #expect(try server.updateValue([5], for: tx, toCentral: central, now: serverStart) == .handled)
        #expect(server.split(server.takeOutput()).sent == ["1d200005"])
        #expect(server.transmitCredits == 2)
    }
}
