import BluetoothCore
import FoundationEssentials
import Glibc
import StateFile

/// Keeps the static random address used when the controller has no public address, so phones
/// see the same device across restarts (Core Vol 6 Part B 1.3.2.1).
struct StaticAddressStore {
    static let fileName = "static-random-address"
    let directory: String

    var path: String { directory + "/" + Self.fileName }

    /// The stored address, or a new one written to the state directory by `writer` (the bring-up
    /// waits for it, the event loop does not).
    func loadOrCreate(writer: StateFileWriter) async throws(HostError) -> BluetoothAddress {
        let stored: String?
        do {
            stored = try StateFile.readValue(path)
        } catch {
            throw HostError("cannot read the static random address: \(error)")
        }
        if let stored {
            if let address = BluetoothAddress(stored, kind: .random), address.isStaticRandom {
                return address
            }
            throw HostError(
                "\(path) holds \"\(stored)\", not a static random address "
                    + "(AA:BB:CC:DD:EE:FF with the top two bits set); fix or delete it")
        }
        let address = Self.generate()
        if let failure = await writer.write(Array((address.description + "\n").utf8), to: path, mode: 0o600) {
            throw HostError("cannot store the static random address: \(failure)")
        }
        return address
    }

    /// A random address with the two top bits set whose other 46 bits are neither all 0 nor all 1.
    static func generate() -> BluetoothAddress {
        var generator = SystemRandomNumberGenerator()
        while true {
            var bytes = (0..<6).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bytes[5] |= 0xC0
            let rest = bytes[0..<5] + [bytes[5] & 0x3F]
            if rest.allSatisfy({ $0 == 0 }) || (rest.dropLast().allSatisfy { $0 == 0xFF } && rest.last == 0x3F) {
                continue
            }
            return BluetoothAddress(littleEndianBytes: bytes, kind: .random)
        }
    }
}
