import BluetoothCore
import Foundation

/// Keeps the static random address used when the controller has no public address, so phones
/// see the same device across restarts (Core Vol 6 Part B 1.3.2.1).
struct StaticAddressStore {
    static let fileName = "static-random-address"
    let directory: String

    var path: String { (directory as NSString).appendingPathComponent(Self.fileName) }

    /// The stored address, or a new one written to the state directory.
    func loadOrCreate() throws(HostError) -> BluetoothAddress {
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if let address = BluetoothAddress(trimmed, kind: .random), address.isStaticRandom {
                return address
            }
            throw HostError("\(path) holds \"\(trimmed)\", not a static random address "
                + "(AA:BB:CC:DD:EE:FF with the top two bits set); fix or delete it")
        }
        let address = Self.generate()
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try (address.description + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw HostError("cannot store the static random address in \(path): \(error.localizedDescription)")
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
