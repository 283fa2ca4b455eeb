import BluetoothATT
import BluetoothCore
import Testing

@testable import BluetoothGATT

/// A full discovery of the fixture (three primary services and a secondary one, plus GAP and
/// GATT) through ATT alone finds exactly the handle layout the database promises.
@Suite struct DiscoveryTests {
    typealias Service = GATTClient.Service
    typealias Characteristic = GATTClient.Characteristic

    @Test func discoversEveryServiceIncludeCharacteristicAndDescriptor() throws {
        let (server, _, _) = try Fixture.server()
        server.connect(CentralID(1))
        let client = GATTClient(server: server, central: CentralID(1))

        let primaries = try client.services(type: .primaryService)
        #expect(
            primaries == [
                Service(start: 1, end: 7, uuid: BluetoothUUID(0x1800)),
                Service(start: 8, end: 15, uuid: BluetoothUUID(0x1801)),
                Service(start: 19, end: 29, uuid: BluetoothUUID(0x180D)),
                Service(start: 30, end: 42, uuid: Fixture.nordicService),
                Service(start: 43, end: 46, uuid: BluetoothUUID(0x180F))
            ])
        #expect(try client.services(type: .secondaryService) == [Service(start: 16, end: 18, uuid: BluetoothUUID(0xFFF0))])
        #expect(
            try client.includes(of: primaries[2]) == [
                GATTClient.Include(handle: 20, start: 16, end: 18, uuid: BluetoothUUID(0xFFF0))
            ])
        #expect(try client.includes(of: primaries[3]).isEmpty)

        var characteristics: [BluetoothUUID: [Characteristic]] = [:]
        for service in primaries { characteristics[service.uuid] = try client.characteristics(of: service) }
        #expect(
            characteristics[BluetoothUUID(0x1800)] == [
                Characteristic(declaration: 2, properties: 0x02, valueHandle: 3, uuid: .deviceName),
                Characteristic(declaration: 4, properties: 0x02, valueHandle: 5, uuid: .appearance),
                Characteristic(declaration: 6, properties: 0x02, valueHandle: 7, uuid: .peripheralPreferredConnectionParameters)
            ])
        #expect(
            characteristics[BluetoothUUID(0x1801)] == [
                Characteristic(declaration: 9, properties: 0x20, valueHandle: 10, uuid: .serviceChanged),
                Characteristic(declaration: 12, properties: 0x0A, valueHandle: 13, uuid: .clientSupportedFeatures),
                Characteristic(declaration: 14, properties: 0x02, valueHandle: 15, uuid: .databaseHash)
            ])
        #expect(
            characteristics[BluetoothUUID(0x180D)] == [
                Characteristic(declaration: 21, properties: 0x12, valueHandle: 22, uuid: BluetoothUUID(0x2A37)),
                Characteristic(declaration: 25, properties: 0x0C, valueHandle: 26, uuid: BluetoothUUID(0x2A39)),
                Characteristic(declaration: 27, properties: 0x02, valueHandle: 28, uuid: BluetoothUUID(0x2A38))
            ])
        #expect(
            characteristics[Fixture.nordicService] == [
                Characteristic(declaration: 31, properties: 0xBA, valueHandle: 32, uuid: Fixture.nordicTX),
                Characteristic(declaration: 35, properties: 0x02, valueHandle: 36, uuid: Fixture.nordicRX),
                Characteristic(declaration: 37, properties: 0x02, valueHandle: 38, uuid: BluetoothUUID(0xFFF2)),
                Characteristic(declaration: 39, properties: 0x02, valueHandle: 40, uuid: BluetoothUUID(0xFFF3)),
                Characteristic(declaration: 41, properties: 0x08, valueHandle: 42, uuid: BluetoothUUID(0xFFF4))
            ])
        #expect(
            characteristics[BluetoothUUID(0x180F)] == [
                Characteristic(declaration: 44, properties: 0x12, valueHandle: 45, uuid: BluetoothUUID(0x2A19))
            ])

        // Descriptors: between a value handle and the next declaration (or the service end).
        var descriptors: [UInt16: BluetoothUUID] = [:]
        for service in primaries {
            let found = characteristics[service.uuid]!
            for (index, characteristic) in found.enumerated() {
                let end = index + 1 < found.count ? found[index + 1].declaration - 1 : service.end
                for entry in try client.information(from: characteristic.valueHandle + 1, to: end) {
                    descriptors[entry.handle] = entry.type
                }
            }
        }
        #expect(
            descriptors == [
                11: .clientCharacteristicConfiguration,
                23: .clientCharacteristicConfiguration, 24: .characteristicUserDescription,
                29: .characteristicPresentationFormat,
                33: .characteristicExtendedProperties, 34: .clientCharacteristicConfiguration,
                46: .clientCharacteristicConfiguration
            ])
        #expect(try client.request(.readRequest(handle: 24)) == .readResponse(Array("Heart Rate".utf8)))
        #expect(try client.request(.readRequest(handle: 33)) == .readResponse([0x01, 0x00]))
        #expect(try client.request(.readRequest(handle: 29)) == .readResponse([0x04, 0x00, 0x00, 0x27, 0x01, 0x00, 0x00]))
        #expect(try client.request(.readRequest(handle: 7)) == .readResponse([24, 0, 40, 0, 0, 0, 0x90, 0x01]))

        // Every handle from 1 to 46 exists, none after.
        #expect(try client.information(from: 1, to: 0xFFFF).map(\.handle) == Array(1...46))
    }

    @Test func handlesAreTheSameAfterARestartAndGapsAreReusedFirstFit() throws {
        let (first, _, services) = try Fixture.server()
        let (second, _, _) = try Fixture.server()
        #expect(first.services == second.services)
        #expect(first.databaseHash == second.databaseHash)

        // Removing the 13-handle service leaves 30–42 free; a 4-handle service takes 30–33.
        let hashBefore = first.databaseHash
        try first.removeService(services[2].id, now: serverStart)
        #expect(first.databaseHash != hashBefore)
        let again = try first.addService(Fixture.battery, now: serverStart)
        #expect(again.handles == 30...33)
        #expect(first.services.map(\.handles) == [1...7, 8...15, 16...18, 19...29, 30...33, 43...46])
    }

    /// Past a run of free handles an attribute no longer lies at its handle's place from the
    /// first: it is found all the same, and a handle in the run is no attribute.
    @Test func attributesPastFreeHandlesAreFound() throws {
        let (server, _, services) = try Fixture.server()
        try server.removeService(services[1].id, now: serverStart)  // frees 19–29
        server.connect(CentralID(1))
        #expect(server.exchange("0a2000").sent == ["0b03"])  // 6E400003's value, handle 32
        #expect(server.exchange("0a2d00").sent == ["0b64"])  // battery level, handle 45
        #expect(server.exchange("0a1900").sent == ["010a190001"])  // handle 25: Invalid Handle
        #expect(server.exchange("0a1200").sent == ["0b2a"])  // before the run, handle 18 as ever
    }

    @Test func refusesInvalidServices() throws {
        let (server, _, services) = try Fixture.server()
        let writableFixed = GATTService(
            uuid: BluetoothUUID(0xAAAA),
            characteristics: [
                GATTCharacteristic(
                    uuid: BluetoothUUID(0xAAAB), properties: [.read, .write], permissions: [.readable, .writeable],
                    value: .fixed([1]))
            ])
        #expect(throws: GATTDatabaseError.fixedValueMustBeReadOnly(BluetoothUUID(0xAAAB))) {
            try server.addService(writableFixed, now: serverStart)
        }
        let ownCCCD = GATTService(
            uuid: BluetoothUUID(0xAAAA),
            characteristics: [
                GATTCharacteristic(
                    uuid: BluetoothUUID(0xAAAB), properties: [.notify], permissions: .readable, value: .dynamic,
                    descriptors: [GATTDescriptor(uuid: .clientCharacteristicConfiguration, value: [0, 0])])
            ])
        #expect(throws: GATTDatabaseError.reservedDescriptor(.clientCharacteristicConfiguration)) {
            try server.addService(ownCCCD, now: serverStart)
        }
        let tooLong = GATTService(
            uuid: BluetoothUUID(0xAAAA),
            characteristics: [
                GATTCharacteristic(
                    uuid: BluetoothUUID(0xAAAB), properties: .read, permissions: .readable,
                    value: .fixed([UInt8](repeating: 0, count: 513)))
            ])
        #expect(throws: GATTDatabaseError.valueTooLong(BluetoothUUID(0xAAAB), length: 513)) {
            try server.addService(tooLong, now: serverStart)
        }
        try server.removeService(services[0].id, now: serverStart)
        let orphan = GATTService(uuid: BluetoothUUID(0xAAAA), includedServices: [services[0].id], characteristics: [])
        #expect(throws: GATTDatabaseError.includedServiceNotPublished(services[0].id)) {
            try server.addService(orphan, now: serverStart)
        }
        let gap = server.services[0].id
        #expect(throws: GATTDatabaseError.notRemovable(gap)) { try server.removeService(gap, now: serverStart) }
        #expect(throws: GATTDatabaseError.unknownService(services[0].id)) { try server.removeService(services[0].id, now: serverStart) }
    }
}
