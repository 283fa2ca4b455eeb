import BluetoothCore
import Foundation
import Testing

@testable import BluetoothHCI

/// Byte vectors laid out as Core Vol 4 Part E 5.4 and 7 specify (H4 indicator first).
struct HCICommandEncodingTests {
    static let vectors: [(HCICommand, String)] = [
        (.reset, "01 03 0c 00"),
        (.readLocalVersion, "01 01 10 00"),
        (.readBDADDR, "01 09 10 00"),
        (.leReadBufferSize, "01 02 20 00"),
        (.setEventMask(0x2000_8000_0200_8890), "01 01 0c 08 90 88 00 02 00 80 00 20"),
        (.leSetEventMask(0x0000_0000_0002_0A5F), "01 01 20 08 5f 0a 02 00 00 00 00 00"),
        (.disconnect(handle: 0x0040, reason: .remoteUserTerminated), "01 06 04 03 40 00 13"),
        (
            .leSetAdvertisingParameters(
                intervalMin: 0x00A0, intervalMax: 0x00A0, type: .connectableUndirected,
                ownAddressType: .public),
            "01 06 20 0f a0 00 a0 00 00 00 00 00 00 00 00 00 00 07 00"
        ),
        (.leSetAdvertisingEnable(true), "01 0a 20 01 01"),
        (
            .leSetRandomAddress(BluetoothAddress("C1:22:33:44:55:66", kind: .random)!),
            "01 05 20 06 66 55 44 33 22 c1"
        ),
        (.leSetDataLength(handle: 0x0040, txOctets: 251, txTime: 2120), "01 22 20 06 40 00 fb 00 48 08"),
        (.leSetPHY2M(handle: 0x0040), "01 32 20 07 40 00 00 02 02 00 00"),
        (.leSetExtendedAdvertisingEnable(true, handle: 0), "01 39 20 06 01 01 00 00 00 00"),
        (
            .leSetExtendedAdvertisingParameters(handle: 0, intervalMin: 0xA0, intervalMax: 0xA0, ownAddressType: .random),
            "01 36 20 19 00 13 00 a0 00 00 a0 00 00 07 01 00 00 00 00 00 00 00 00 7f 01 00 01 00 00"
        ),
        (.leSetExtendedAdvertisingData(handle: 0, [0x02, 0x01, 0x06]), "01 37 20 07 00 03 01 03 02 01 06"),
        (
            .leLongTermKeyRequestReply(handle: 0x0040, littleEndianKey: Array(0x00...0x0F)),
            "01 1a 20 12 40 00 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"
        ),
        (.leLongTermKeyRequestNegativeReply(handle: 0x0040), "01 1b 20 02 40 00")
    ]

    @Test(arguments: vectors)
    func encodesAsTheSpecLaysOut(command: HCICommand, hex: String) {
        #expect(HCIPacket.command(command).h4Bytes.hexString == hex.replacingOccurrences(of: " ", with: ""))
    }

    @Test func legacyAdvertisingDataIsPaddedTo31Bytes() {
        let bytes = HCICommand.leSetAdvertisingData([0x02, 0x01, 0x06]).encoded
        #expect(bytes.count == 3 + 32)
        #expect(Array(bytes.prefix(7)) == [0x08, 0x20, 0x20, 0x03, 0x02, 0x01, 0x06])
        #expect(bytes.dropFirst(7).allSatisfy { $0 == 0 })
    }

    @Test func opcodeSplitsIntoGroupAndCommand() {
        #expect(HCIOpcode.leSetPHY.ogf == 0x08)
        #expect(HCIOpcode.leSetPHY.ocf == 0x0032)
        #expect(HCIOpcode.reset.description == "Reset (0x0c03)")
    }
}

struct HCIEventDecodingTests {
    static let address = BluetoothAddress("C0:11:22:33:44:55", kind: .random)!

    static let vectors: [(String, HCIEvent)] = [
        ("0e 04 01 03 0c 00", .commandComplete(numCommandPackets: 1, opcode: .reset, returnParameters: [0x00])),
        ("0f 04 00 01 32 20", .commandStatus(status: .success, numCommandPackets: 1, opcode: .leSetPHY)),
        ("05 04 00 40 00 13", .disconnectionComplete(status: .success, handle: 0x0040, reason: .remoteUserTerminated)),
        (
            "13 09 02 40 00 41 00 03 00 01 00",
            .numberOfCompletedPackets([.init(handle: 0x40, count: 3), .init(handle: 0x41, count: 1)])
        ),
        ("10 01 07", .hardwareError(code: 0x07)),
        (
            "3e 13 01 00 40 00 01 01 55 44 33 22 11 c0 28 00 00 00 f4 01 00",
            .le(
                .connectionComplete(
                    LEConnectionComplete(
                        status: .success, handle: 0x0040, role: .peripheral, peerAddressType: 1, peerAddress: address,
                        interval: 0x28, latency: 0, supervisionTimeout: 0x1F4)))
        ),
        (
            "3e 0b 07 40 00 fb 00 48 08 1b 00 48 01",
            .le(.dataLengthChange(handle: 0x40, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 27, maxRxTime: 328))
        ),
        ("3e 06 0c 00 40 00 02 02", .le(.phyUpdateComplete(status: .success, handle: 0x40, txPHY: 2, rxPHY: 2))),
        (
            "3e 0a 03 00 40 00 18 00 00 00 f4 01",
            .le(
                .connectionUpdateComplete(
                    status: .success, handle: 0x40, interval: 0x18, latency: 0,
                    supervisionTimeout: 0x1F4))
        ),
        (
            "3e 06 12 00 00 40 00 00",
            .le(
                .advertisingSetTerminated(
                    status: .success, advertisingHandle: 0, connectionHandle: 0x40,
                    completedEvents: 0))
        ),
        ("08 04 00 40 00 01", .encryptionChange(status: .success, handle: 0x40, enabled: true)),
        ("08 04 06 40 00 00", .encryptionChange(status: HCIStatus(rawValue: 0x06), handle: 0x40, enabled: false)),
        ("30 03 00 40 00", .encryptionKeyRefreshComplete(status: .success, handle: 0x40)),
        (
            "3e 0d 05 40 00 08 07 06 05 04 03 02 01 34 12",
            .le(.longTermKeyRequest(handle: 0x40, rand: 0x0102_0304_0506_0708, ediv: 0x1234))
        ),
        ("07 01 00", .unknown(code: 0x07, parameters: [0x00])),
        ("3e 02 02 00", .le(.unknown(subevent: 0x02, parameters: [0x00])))
    ]

    @Test(arguments: vectors)
    func decodesAndReencodes(hex: String, expected: HCIEvent) throws {
        let bytes = try #require([UInt8](hexString: hex))
        #expect(try HCIEvent(decoding: bytes[...]) == expected)
        #expect(expected.encoded == bytes)
    }

    @Test func enhancedConnectionCompleteCarriesThePeer() throws {
        let bytes = try #require(
            [UInt8](
                hexString:
                    "3e 1f 0a 00 41 00 01 00 66 55 44 33 22 11 00 00 00 00 00 00 00 00 00 00 00 00 18 00 00 00 48 00 01"))
        guard case .le(.connectionComplete(let event)) = try HCIEvent(decoding: bytes[...]) else {
            Issue.record("not a connection complete")
            return
        }
        #expect(event.handle == 0x41)
        #expect(event.peerAddress == BluetoothAddress("11:22:33:44:55:66")!)
        #expect(event.interval == 0x18)
        #expect(event.supervisionTimeout == 0x48)
        #expect(HCIEvent.le(.connectionComplete(event)).encoded == bytes)
    }

    /// Number Of Completed Packets (7.7.19): every handle, then every count; more entries than
    /// the list holds inline go on in its array, in order.
    static let completedPackets: [(String, HCIEvent.CompletedPacketsList)] = [
        ("13 01 00", []),
        ("13 05 01 40 00 01 00", [.init(handle: 0x40, count: 1)]),
        (
            "13 0d 03 40 00 41 00 42 0f 01 00 02 00 ff ff",
            [.init(handle: 0x40, count: 1), .init(handle: 0x41, count: 2), .init(handle: 0xF42, count: 0xFFFF)]
        ),
        (
            "13 15 05 40 00 41 00 42 00 43 00 44 00 01 00 02 00 03 00 04 00 05 00",
            [
                .init(handle: 0x40, count: 1), .init(handle: 0x41, count: 2), .init(handle: 0x42, count: 3),
                .init(handle: 0x43, count: 4), .init(handle: 0x44, count: 5)
            ]
        )
    ]

    @Test(arguments: completedPackets)
    func decodesAndReencodesCompletedPackets(hex: String, entries: HCIEvent.CompletedPacketsList) throws {
        let bytes = try #require([UInt8](hexString: hex))
        #expect(try HCIEvent(decoding: bytes[...]) == .numberOfCompletedPackets(entries))
        #expect(HCIEvent.numberOfCompletedPackets(entries).encoded == bytes)
    }

    /// Bytes after the last count (none in the specification) are not read, as any event's
    /// parameters beyond those it defines.
    @Test func completedPacketsIgnoresBytesAfterTheLastCount() throws {
        let bytes = try #require([UInt8](hexString: "13 07 01 40 00 02 00 ee ee"))
        #expect(try HCIEvent(decoding: bytes[...]) == .numberOfCompletedPackets([.init(handle: 0x40, count: 2)]))
    }

    /// Decoded in place from the middle of a read buffer, as the framer hands events on.
    @Test(arguments: vectors)
    func decodesFromASliceOfALargerBuffer(hex: String, expected: HCIEvent) throws {
        let bytes = try #require([UInt8](hexString: hex))
        let buffer = [0x04, 0xEE] + bytes + [0xEE]
        #expect(try HCIEvent(decoding: buffer[2..<buffer.count - 1]) == expected)
    }

    static let malformed: [(String, HCIDecodingError)] = [
        ("0e", .truncated(what: "HCI event header")),
        ("0e 05 01 03 0c", .lengthMismatch(what: "HCI event 0x0e", declared: 5, actual: 3)),
        ("0e 01 01", .truncated(what: "HCI event 0x0e parameters")),
        ("13 05 02 40 00 01 00", .truncated(what: "HCI event 0x13 parameters")),
        ("13 00", .truncated(what: "HCI event 0x13 parameters")),
        ("13 03 01 40 00", .truncated(what: "HCI event 0x13 parameters")),
        ("13 0c 03 40 00 41 00 42 00 01 00 02 00 03", .truncated(what: "HCI event 0x13 parameters")),
        ("13 09 05 40 00 41 00 01 00 02 00", .truncated(what: "HCI event 0x13 parameters")),
        ("3e 06 01 00 40 00 07 00", .invalidField(what: "LE Connection Complete", detail: "role 0x07"))
    ]

    @Test(arguments: malformed)
    func malformedEventsAreNamed(hex: String, error: HCIDecodingError) throws {
        let bytes = try #require([UInt8](hexString: hex))
        #expect(throws: error) { try HCIEvent(decoding: bytes[...]) }
    }
}

struct CompletedPacketsListTests {
    @Test func holdsEntriesBeyondItsInlineOnesInOrder() {
        var list = HCIEvent.CompletedPacketsList()
        for handle: UInt16 in 0x40..<0x46 { list.append(.init(handle: handle, count: handle - 0x3F)) }
        #expect(list.count == 6)
        #expect(list.map(\.handle) == Array(0x40..<0x46))
        list[1].count = 20
        list[5].count = 60
        #expect(list.map(\.count) == [1, 20, 3, 4, 5, 60])
        #expect(list == HCIEvent.CompletedPacketsList(list.map { $0 }))
    }

    @Test func equalityComparesTheEntriesInOrder() {
        let two: HCIEvent.CompletedPacketsList = [.init(handle: 0x40, count: 1), .init(handle: 0x41, count: 2)]
        #expect(two == [.init(handle: 0x40, count: 1), .init(handle: 0x41, count: 2)])
        #expect(two != [.init(handle: 0x40, count: 1)])
        #expect(two != [.init(handle: 0x41, count: 2), .init(handle: 0x40, count: 1)])
        #expect(two != [.init(handle: 0x40, count: 1), .init(handle: 0x41, count: 3)])
        #expect(HCIEvent.CompletedPacketsList() == [])
        let six = HCIEvent.CompletedPacketsList((0x40..<0x46).map { .init(handle: $0, count: 1) })
        var changed = six
        changed[5].count = 2
        #expect(six != changed, "entries past the inline ones count too")
    }
}

struct HCIACLTests {
    @Test func decodesHandleBoundaryAndData() throws {
        // ATT Exchange MTU Request on CID 4, handle 0x040, first automatically flushable.
        let packet = try HCIACLPacket(decoding: [0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x02, 0x17, 0x00])
        #expect(packet.handle == 0x40)
        #expect(packet.boundary == .firstFlushable)
        #expect(packet.data == [0x03, 0x00, 0x04, 0x00, 0x02, 0x17, 0x00])
    }

    @Test func decodesFromASliceOfALargerBuffer() throws {
        let buffer: [UInt8] = [0x02, 0x41, 0x20, 0x02, 0x00, 0xAA, 0xBB, 0x04]
        let packet = try HCIACLPacket(decoding: buffer[1..<7])
        #expect(packet == HCIACLPacket(handle: 0x41, boundary: .firstFlushable, data: [0xAA, 0xBB]))
        let commandBuffer: [UInt8] = [0x01, 0x0A, 0x20, 0x01, 0x01, 0x04]
        let command = try HCICommand(decoding: commandBuffer[1..<5])
        #expect(command == .leSetAdvertisingEnable(true))
    }

    @Test func encodesFirstNonFlushableAndContinuing() {
        #expect(
            HCIACLPacket(handle: 0x41, boundary: .firstNonFlushable, data: [1, 2]).encoded
                == [0x41, 0x00, 0x02, 0x00, 1, 2])
        #expect(
            HCIACLPacket(handle: 0x41, boundary: .continuing, data: [3]).encoded
                == [0x41, 0x10, 0x01, 0x00, 3])
    }

    @Test func rejectsWrongLengthAndReservedBoundary() {
        #expect(throws: HCIDecodingError.lengthMismatch(what: "ACL data packet", declared: 3, actual: 1)) {
            try HCIACLPacket(decoding: [0x40, 0x20, 0x03, 0x00, 0x01])
        }
        #expect(
            throws: HCIDecodingError.invalidField(
                what: "ACL data packet",
                detail: "packet boundary flag 0b11 is reserved")
        ) {
            try HCIACLPacket(decoding: [0x40, 0x30, 0x00, 0x00])
        }
        #expect(throws: HCIDecodingError.truncated(what: "ACL data packet header")) {
            try HCIACLPacket(decoding: [0x40])
        }
    }
}

extension H4Framer {
    /// Every packet framed, appended to `packets`; the receiver never stops.
    fileprivate mutating func push(_ bytes: ArraySlice<UInt8>, appendingTo packets: inout [HCIPacket]) throws(HCIDecodingError) {
        try push(bytes) {
            packets.append($0)
            return true
        }
    }
}

struct H4FramerTests {
    static let packets: [HCIPacket] = [
        .event(.commandComplete(numCommandPackets: 1, opcode: .reset, returnParameters: [0])),
        .acl(HCIACLPacket(handle: 0x40, boundary: .firstFlushable, data: Array(0..<200))),
        .event(.numberOfCompletedPackets([.init(handle: 0x40, count: 2)])),
        .command(.leSetAdvertisingEnable(true)),
        .other(type: .iso, bytes: [0x01, 0x00, 0x02, 0x00, 0xAA, 0xBB])
    ]
    static var stream: [UInt8] { packets.flatMap(\.h4Bytes) }

    @Test func wholeStreamAtOnce() throws {
        var framer = H4Framer()
        var out: [HCIPacket] = []
        try framer.push(Self.stream[...], appendingTo: &out)
        #expect(out == Self.packets)
        #expect(framer.pendingByteCount == 0)
    }

    @Test func oneByteAtATime() throws {
        var framer = H4Framer()
        var out: [HCIPacket] = []
        for byte in Self.stream { try framer.push([byte], appendingTo: &out) }
        #expect(out == Self.packets)
    }

    @Test(arguments: [2, 3, 5, 7, 64, 203])
    func anyChunking(chunk: Int) throws {
        var framer = H4Framer()
        var out: [HCIPacket] = []
        let stream = Self.stream
        var start = 0
        while start < stream.count {
            let end = min(start + chunk, stream.count)
            try framer.push(stream[start..<end], appendingTo: &out)
            start = end
        }
        #expect(out == Self.packets)
        #expect(framer.pendingByteCount == 0)
    }

    @Test func unknownIndicatorThrows() {
        var framer = H4Framer()
        var out: [HCIPacket] = []
        #expect(throws: HCIDecodingError.unknownPacketType(0x09)) { try framer.push([0x09, 0x00], appendingTo: &out) }
    }

    /// A receiver that closes the link over a packet is handed no more; what follows is held
    /// back, not framed.
    @Test func aReceiverThatStopsIsHandedNoMorePackets() throws {
        var framer = H4Framer()
        var out: [HCIPacket] = []
        try framer.push(Self.stream[...]) { packet in
            out.append(packet)
            return out.count < 2
        }
        #expect(out == Array(Self.packets.prefix(2)))
        #expect(framer.pendingByteCount == Self.packets.dropFirst(2).map(\.h4Bytes.count).reduce(0, +))
    }

    @Test func malformedPacketIsReportedAndTheStreamGoesOn() throws {
        var framer = H4Framer()
        // A Command Complete too short for its opcode, then a valid Hardware Error.
        var out: [HCIPacket] = []
        try framer.push([0x04, 0x0E, 0x01, 0x01, 0x04, 0x10, 0x01, 0x07], appendingTo: &out)
        #expect(out.count == 2)
        guard case .malformed(let type, let bytes, _) = out[0] else {
            Issue.record("expected a malformed packet, got \(out[0])")
            return
        }
        #expect(type == .event)
        #expect(bytes == [0x0E, 0x01, 0x01])
        #expect(out[1] == .event(.hardwareError(code: 0x07)))
    }
}

struct HCIReturnParameterTests {
    @Test func localVersion() throws {
        let result = HCICommandResult(returnParameters: [0x00, 0x0D, 0x34, 0x12, 0x0D, 0x0F, 0x00, 0x78, 0x56])
        #expect(result.status == .success)
        let version = try LocalVersion(body: result.body)
        #expect(version.hciVersion == 0x0D)
        #expect(version.coreVersionName == "5.4")
        #expect(version.hciRevision == 0x1234)
        #expect(version.manufacturer == 0x000F)
        #expect(version.lmpSubversion == 0x5678)
    }

    @Test func bufferSizes() throws {
        let le = try ACLBufferSize(leReadBufferSizeBody: [0xFB, 0x00, 0x0A])
        #expect(le == ACLBufferSize(dataLength: 251, packetCount: 10))
        #expect(!le.isShared)
        #expect(try ACLBufferSize(leReadBufferSizeBody: [0, 0, 0]).isShared)
        let shared = try ACLBufferSize(readBufferSizeBody: [0xFD, 0x03, 0x40, 0x08, 0x00, 0x00, 0x00])
        #expect(shared == ACLBufferSize(dataLength: 1021, packetCount: 8))
    }

    @Test func supportedCommandBits() throws {
        var octets = [UInt8](repeating: 0, count: 64)
        octets[33] = 1 << 6
        octets[35] = 1 << 6
        let commands = try SupportedCommands(body: octets)
        #expect(commands.leSetDataLength)
        #expect(commands.leSetPHY)
        #expect(!commands.leSetExtendedAdvertisingParameters)
        #expect(throws: HCIDecodingError.self) { try SupportedCommands(body: [0, 1]) }
    }

    @Test func leFeatureBits() {
        let features = LEFeatures(rawValue: 1 << 5 | 1 << 8)
        #expect(features.dataLengthExtension)
        #expect(features.le2MPHY)
        #expect(!features.extendedAdvertising)
    }

    @Test func statusNames() {
        #expect(HCIStatus.remoteUserTerminated.description == "Remote User Terminated Connection (0x13)")
        #expect(HCIStatus(rawValue: 0x99).description == "HCI status 0x99")
    }
}
