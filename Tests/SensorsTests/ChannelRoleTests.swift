import Testing

@testable import Sensors

/// A sample's role follows from its channel's name, however the name's text was made (a
/// configuration's channel is read from YAML, not the constant).
@Suite struct ChannelRoleTests {
    @Test(arguments: [
        ("value", ChannelRole.reading), ("temperature", .reading), ("high_time", .reading),
        ("available", .availability), ("lost_events", .lostEvents), ("press", .press), ("pressure", .reading)
    ])
    func aChannelsRoleFollowsFromItsName(_ name: String, _ role: ChannelRole) {
        let built = String(decoding: Array(name.utf8), as: UTF8.self)
        #expect(ChannelRole(built) == role)
        #expect(SensorSample(sensor: "s", channel: built, reading: .bool(true), timestampNs: 0).role == role)
        #expect(Emission(channel: built, reading: .bool(true), time: 0).role == role)
    }
}
