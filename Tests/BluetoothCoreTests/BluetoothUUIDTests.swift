import Testing

@testable import BluetoothCore

@Suite struct BluetoothUUIDTests {
    @Test func shortFormIsAnAliasInsideTheBaseUUID() {
        let short = BluetoothUUID(0x180D)
        #expect(short == BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB"))
        #expect(short.description == "180D")
        #expect(short.fullString == "0000180D-0000-1000-8000-00805F9B34FB")
        #expect(short.attBytes == [0x0D, 0x18])
    }

    @Test(arguments: [
        ("180d", "180D"), ("0x2A6E", "2A6E"), ("0000180F", "180F"),
        ("12345678", "12345678-0000-1000-8000-00805F9B34FB"),
        ("6e400001-b5a3-f393-e0a9-e50e24dcca9e", "6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    ])
    func parsesEveryWrittenForm(text: String, expected: String) {
        #expect(BluetoothUUID(text)?.description == expected)
    }

    @Test(arguments: ["", "2A6G", "123", "180D-", "6e400001-b5a3-f393-e0a9-e50e24dcca9", "6e400001b5a3-f393-e0a9-e50e-24dcca9e"])
    func rejectsMalformedText(text: String) {
        #expect(BluetoothUUID(text) == nil)
    }

    @Test func attBytesOf128BitUUIDAreLittleEndian() throws {
        let uuid = try #require(BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E"))
        #expect(
            uuid.attBytes == [
                0x9E, 0xCA, 0xDC, 0x24, 0x0E, 0xE5, 0xA9, 0xE0,
                0x93, 0xF3, 0xA3, 0xB5, 0x01, 0x00, 0x40, 0x6E
            ])
        #expect(BluetoothUUID(littleEndianBytes: uuid.attBytes) == uuid)
        #expect(BluetoothUUID(littleEndianBytes: [0x0D, 0x18]) == BluetoothUUID(0x180D))
        #expect(BluetoothUUID(littleEndianBytes: [1, 2, 3]) == nil)
    }
}

@Suite struct BluetoothAddressTests {
    @Test func parsesAndPrintsMostSignificantFirst() throws {
        let address = try #require(BluetoothAddress("C0:11:22:33:44:55", kind: .random))
        #expect(address.bytes == [0x55, 0x44, 0x33, 0x22, 0x11, 0xC0])
        #expect(address.description == "C0:11:22:33:44:55")
        #expect(address.isStaticRandom)
        #expect(!address.isResolvablePrivate)
        #expect(BluetoothAddress("C0:11:22:33:44") == nil)
        #expect(BluetoothAddress("C0:11:22:33:44:5G") == nil)
    }

    /// The six bytes come back as given; two addresses are equal when their bytes and kinds are.
    @Test func keepsItsBytesAndKind() throws {
        let bytes: [UInt8] = [0x01, 0x80, 0xFF, 0x00, 0x7F, 0x4A]
        let address = BluetoothAddress(littleEndianBytes: bytes, kind: .random)
        #expect(address.bytes == bytes)
        #expect(address.description == "4A:7F:00:FF:80:01")
        #expect(address.isResolvablePrivate)
        #expect(!address.isStaticRandom)
        #expect(address == BluetoothAddress(littleEndianBytes: bytes, kind: .random))
        #expect(address != BluetoothAddress(littleEndianBytes: bytes, kind: .public))
        #expect(address != BluetoothAddress(littleEndianBytes: [0x02] + bytes.dropFirst(), kind: .random))
        #expect(Set([address, BluetoothAddress(littleEndianBytes: bytes, kind: .random)]).count == 1)
        #expect(!BluetoothAddress(littleEndianBytes: bytes, kind: .public).isResolvablePrivate)
    }
}

@Suite struct ByteReaderTests {
    @Test func readsLittleEndianAndThrowsPastTheEnd() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05])
        #expect(try reader.readUInt16() == 0x0201)
        #expect(try reader.readUInt24() == 0x050403)
        #expect(throws: ByteReader.Error.truncated(needed: 1, available: 0)) { try reader.readUInt8() }
    }

    /// A slice is read in place, from its own first byte, and never past its end.
    @Test func readsASliceOfALargerBuffer() throws {
        let buffer: [UInt8] = [0xEE, 0x01, 0x02, 0x03, 0x04, 0x05, 0xEE]
        var reader = ByteReader(buffer[1..<6], offset: 1)
        #expect(reader.remainingCount == 4)
        #expect(try reader.readUInt16() == 0x0302)
        #expect(try reader.readBytes(1) == [0x04])
        #expect(reader.offset == 4)
        #expect(throws: ByteReader.Error.truncated(needed: 2, available: 1)) { try reader.readUInt16() }
        #expect(reader.readRemaining() == [0x05])
        #expect(reader.isAtEnd)
    }

    @Test func writerRoundTrips() throws {
        var writer = ByteWriter()
        writer.write(UInt8(0xAA))
        writer.write(UInt16(0x1234))
        writer.writeUInt24(0x56789A)
        writer.write(UInt32(0xDEAD_BEEF))
        #expect(writer.bytes == [0xAA, 0x34, 0x12, 0x9A, 0x78, 0x56, 0xEF, 0xBE, 0xAD, 0xDE])
        #expect([UInt8](hexString: "aa:34 12") == [0xAA, 0x34, 0x12])
        #expect(writer.bytes.hexString == "aa34129a7856efbeadde")
    }
}
