import BluetoothCore
import Foundation
import StateFile
import TestHarness
import Testing

@testable import BluetoothHost

struct StaticAddressStoreTests {
    @Test func createsOnceThenKeepsTheSameAddress() async throws {
        let scratch = try temporaryDirectory("host")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("state").path
        let store = StaticAddressStore(directory: directory)
        let first = try await store.loadOrCreate(writer: StateFileWriter())
        #expect(first.isStaticRandom)
        #expect(try await store.loadOrCreate(writer: StateFileWriter()) == first)
        #expect(try String(contentsOfFile: store.path, encoding: .utf8) == first.description + "\n")
    }

    @Test func aCorruptFileIsAnErrorNamingIt() async throws {
        let scratch = try temporaryDirectory("host")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let directory = scratch.appendingPathComponent("state").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let store = StaticAddressStore(directory: directory)
        try "12:34:56:78:9A:BC\n".write(toFile: store.path, atomically: true, encoding: .utf8)
        await #expect {
            try await store.loadOrCreate(writer: StateFileWriter())
        } throws: { error in
            (error as? HostError)?.message.contains("not a static random address") == true
                && (error as? HostError)?.message.contains(store.path) == true
        }
    }

    @Test func generatedAddressesHaveTheStaticBitsSet() {
        for _ in 0..<100 {
            let address = StaticAddressStore.generate()
            #expect(address.bytes[5] & 0xC0 == 0xC0)
            #expect(address.kind == .random)
        }
    }
}
