// Child process of the state-file crash test: rewrites one state file as fast as it can, each
// version following the one it finds on disk, until it is killed. Exit 3: the file it found was
// torn (not a complete version).
//
//   StateFileProbe counter FILE   a counter total, as CounterStore writes it, one more each time
//   StateFileProbe bonds DIR      bonds.json through BondStore: up to 40 bonds, the generation
//                                 in the first bond's CCCD value, one more each time
import BluetoothCore
import BluetoothSMP
import StateFile

#if canImport(Glibc)
import Glibc
#endif

func complain(_ text: String) {
    let bytes = Array("StateFileProbe: \(text)\n".utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func torn(_ reason: String) -> Never {
    complain("torn file: \(reason)")
    exit(3)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    complain("usage: StateFileProbe counter FILE | bonds DIR")
    exit(2)
}
switch arguments[1] {
case "counter":
    let path = arguments[2]
    while true {
        var total: UInt64 = 0
        if let bytes = try StateFile.read(path) {
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.hasSuffix("\n"), let value = UInt64(text.dropLast()) else { torn("\"\(text)\"") }
            total = value
        }
        try StateFile.write(Array("\(total + 1)\n".utf8), to: path)
    }
case "bonds":
    let store = BondStore(directory: arguments[2])
    let key = LongTermKey(
        key: SecretKey(mostSignificantFirst: [UInt8](repeating: 0x5A, count: 16)), keySize: 16,
        authenticated: false, secureConnections: true)
    while true {
        let registry: BondRegistry
        do {
            registry = try store.load()
        } catch {
            torn("\(error)")
        }
        let generation = UInt16(registry.bonds.first?.clientConfigurations[1] ?? 0) &+ 1
        var next = BondRegistry()
        for index in 0..<(Int(generation) % 40 + 1) {
            let address = BluetoothAddress(littleEndianBytes: [UInt8(index), 0, 0, 0, 0, 0xC0], kind: .random)
            next.insert(
                Bond(
                    identity: address, longTermKey: key,
                    clientConfigurations: index == 0 ? [1: generation] : [2: 1]))
        }
        try store.save(next)
    }
default:
    complain("unknown mode \(arguments[1])")
    exit(2)
}
