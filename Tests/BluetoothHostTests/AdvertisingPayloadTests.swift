import BluetoothCore
import Testing

@testable import BluetoothHost

struct AdvertisingPayloadTests {
    static let service = BluetoothUUID("50DB505C-8AC4-4738-8448-3B1D9CC09CC5")!

    @Test func nameAndOne128BitServiceFitTheAdvertisingPacket() {
        let payload = AdvertisingPayload(
            settings: AdvertisingSettings(localName: "gattway", serviceUUIDs: [Self.service]), txPower: nil)
        // Flags; complete list of 128-bit UUIDs (0x07); complete local name (0x09).
        #expect(
            payload.advertisingData == [0x02, 0x01, 0x06, 0x11, 0x07] + Self.service.uint128Bytes
                + [0x08, 0x09] + Array("gattway".utf8))
        #expect(payload.advertisingData.count == 30)
        #expect(payload.scanResponseData.isEmpty)
        #expect(payload.notFitted.isEmpty)
    }

    @Test func longNameMovesToTheScanResponse() {
        let name = "Greenhouse gateway 7"
        let payload = AdvertisingPayload(
            settings: AdvertisingSettings(localName: name, serviceUUIDs: [Self.service]), txPower: nil)
        #expect(payload.advertisingData.count == 21)
        #expect(payload.scanResponseData == [UInt8(name.utf8.count + 1), 0x09] + Array(name.utf8))
        #expect(payload.notFitted.isEmpty)
    }

    @Test func nameTooLongForEitherPacketIsShortenedAndReported() {
        let name = String(repeating: "n", count: 40)
        let payload = AdvertisingPayload(
            settings: AdvertisingSettings(localName: name, serviceUUIDs: [Self.service]), txPower: nil)
        #expect(payload.scanResponseData == [30, 0x08] + Array(repeating: UInt8(ascii: "n"), count: 29))
        #expect(payload.notFitted == ["local name (shortened to 29 of 40 bytes)"])
    }

    @Test func shorteningNeverSplitsAUTF8Character() {
        #expect(AdvertisingPayload.utf8Prefix(Array("aé".utf8), maxBytes: 2) == [0x61])
    }

    @Test func uuidsThatDoNotFitAreListedAsIncompleteAndReported() {
        let uuids = (0..<3).map { BluetoothUUID(high: UInt64($0) << 32 | 0x1111, low: 0x2222) }
        let payload = AdvertisingPayload(settings: AdvertisingSettings(serviceUUIDs: uuids), txPower: nil)
        // One 128-bit UUID fits in each packet; the third goes to the overflow list.
        #expect(payload.advertisingData[3...4] == [0x11, 0x06])
        #expect(payload.scanResponseData[0...1] == [0x11, 0x06])
        #expect(payload.notFitted == ["service UUID \(uuids[2])"])
    }

    @Test func sixteenBitServicesShareOneField() {
        let payload = AdvertisingPayload(
            settings: AdvertisingSettings(serviceUUIDs: [
                BluetoothUUID(0x180D), BluetoothUUID(0x180F),
                BluetoothUUID(0x180D)
            ]), txPower: nil)
        #expect(payload.advertisingData == [0x02, 0x01, 0x06, 0x05, 0x03, 0x0D, 0x18, 0x0F, 0x18])
    }

    /// An open pairing window shows in the flags: LE Limited Discoverable (Core Supplement Part A
    /// 1.3, bit 0) instead of LE General (bit 1); BR/EDR not supported either way.
    @Test func anOpenPairingWindowAdvertisesLimitedDiscoverable() {
        let settings = AdvertisingSettings(serviceUUIDs: [BluetoothUUID(0x180D)])
        #expect(
            AdvertisingPayload(settings: settings, txPower: nil, limitedDiscoverable: true).advertisingData
                == [0x02, 0x01, 0x05, 0x03, 0x03, 0x0D, 0x18])
        #expect(AdvertisingPayload(settings: settings, txPower: nil).advertisingData.prefix(3) == [0x02, 0x01, 0x06])
    }

    @Test func otherFieldsGoWhereverTheyFit() {
        let settings = AdvertisingSettings(
            localName: "gattway", serviceUUIDs: [Self.service], appearance: 0x0540, includeTxPower: true,
            manufacturerData: (companyID: 0xFFFF, data: [1, 2, 3]),
            serviceData: [(uuid: BluetoothUUID(0x181A), data: [0x10, 0x20])])
        let payload = AdvertisingPayload(settings: settings, txPower: -4)
        #expect(payload.advertisingData.count == 30)
        #expect(
            payload.scanResponseData == [
                0x03, 0x19, 0x40, 0x05, 0x02, 0x0A, 0xFC,
                0x05, 0x16, 0x1A, 0x18, 0x10, 0x20,
                0x06, 0xFF, 0xFF, 0xFF, 1, 2, 3
            ])
        #expect(payload.notFitted.isEmpty)
    }

    @Test func manufacturerDataTooLargeIsReportedByName() {
        let settings = AdvertisingSettings(
            localName: "gattway", serviceUUIDs: [Self.service],
            manufacturerData: (companyID: 0x004C, data: Array(repeating: 0, count: 30)))
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(payload.notFitted == ["manufacturer data (34 bytes)"])
    }

    /// Passive scanners' service data (BTHome) at the 31-byte limit: right after the flags, in the
    /// advertising data only; the name takes what is left there, else the scan response.
    /// Columns: service data bytes after the UUID, name length, then the advertising data's and
    /// scan response's lengths and what did not fit.
    @Test(arguments: [
        (24, 2, 31, 4, [String]()),  // 3 + 28 = 31 exactly; the name goes to the scan response
        (4, 18, 31, 0, []),  // 3 + 8 + 20: the name fits beside it, exactly
        (4, 19, 11, 21, []),  // one byte more: the whole name moves to the scan response
        (4, 40, 11, 31, ["local name (shortened to 29 of 40 bytes)"]),
        (25, 2, 7, 0, ["service data for FCD2 (29 bytes; the advertising data holds 28)"])
    ])
    func passiveServiceDataComesFirstInTheAdvertisingData(
        dataCount: Int, nameCount: Int, advertisingCount: Int, scanResponseCount: Int, notFitted: [String]
    ) {
        let data = (0..<dataCount).map { UInt8($0) }
        let settings = AdvertisingSettings(
            localName: String(repeating: "n", count: nameCount),
            passiveServiceData: (uuid: BluetoothUUID(0xFCD2), data: data))
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(payload.advertisingData.count == advertisingCount)
        #expect(payload.scanResponseData.count == scanResponseCount)
        #expect(payload.notFitted == notFitted)
        if notFitted.first?.hasPrefix("service data") != true {
            #expect(Array(payload.advertisingData.prefix(7)) == [0x02, 0x01, 0x06, UInt8(dataCount + 3), 0x16, 0xD2, 0xFC])
        }
    }

    /// Service UUIDs and the other fields come after it: the 128-bit UUID still fits beside BTHome,
    /// the name that fitted beside the UUID alone moves to the scan response.
    @Test func serviceUUIDsAndTheNameFollowThePassiveServiceData() {
        let settings = AdvertisingSettings(
            localName: "gattway", serviceUUIDs: [Self.service],
            passiveServiceData: (uuid: BluetoothUUID(0xFCD2), data: [0x40, 0x00, 0x01, 0x3A, 0x01]))
        let payload = AdvertisingPayload(settings: settings, txPower: nil)
        #expect(
            payload.advertisingData
                == [0x02, 0x01, 0x06, 0x08, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x01, 0x3A, 0x01, 0x11, 0x07]
                + Self.service.uint128Bytes)
        #expect(payload.scanResponseData == [0x08, 0x09] + Array("gattway".utf8))
        #expect(payload.notFitted.isEmpty)
    }

    @Test func intervalIsConvertedTo625MicrosecondUnits() {
        #expect(AdvertisingSettings(intervalMilliseconds: 100).intervalUnits == 160)
        #expect(AdvertisingSettings(intervalMilliseconds: 1).intervalUnits == 0x20)
        #expect(AdvertisingSettings(intervalMilliseconds: 60_000).intervalUnits == 0x4000)
    }
}
