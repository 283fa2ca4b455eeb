// Child process of the state-file crash tests: rewrites one state file through its real writer as
// fast as it can, each version following the one it finds on disk, until it is killed. What the
// test must know to check the file after the kill goes to stdout, a line per step, written
// unbuffered once the step is done. Exit 3: the file it found was torn (not a complete version).
//
//   StateFileProbe counter FILE   a counter total, as CounterStore writes it, one more each time.
//                                 Prints "found N" (what it found first) and "saved N" (each
//                                 total once written and fsynced)
//   StateFileProbe bonds DIR      bonds.json through BondStore: up to 40 bonds, the generation
//                                 in the first bond's CCCD value, one more each time. Prints
//                                 "found G" (the generation it found first) and "saved G"
//   StateFileProbe outbox DIR RUN the MQTT outbox journal through MQTTOutbox: events on topic
//                                 probe/RUN/<n>, each payload its topic and ";" eight times; it
//                                 keeps 20 pending, acknowledging the oldest (compacting as the
//                                 outbox does), and reopens the outbox every 100 events.
//                                 Prints "appended TOPIC", "acknowledged TOPIC" and, once the
//                                 outbox says an event is on the disk, "durable TOPIC"
//   StateFileProbe bthome DIR     bthome.counter through BTHomeCounter: takes counters, reserving
//                                 ahead as the advertiser does, and loads it anew (a restart)
//                                 every 0–2047 counters. Prints each counter taken
//   StateFileProbe address KEPT DIR  the static random address through StaticAddressStore: loads
//                                 the one in KEPT (made by the first run), prints "kept ADDRESS",
//                                 then makes one in DIR/0, DIR/1, … and prints "made N ADDRESS"
//   StateFileProbe discovery DIR  the Home Assistant discovery record through
//                                 PublishedComponentsFile: generation g holds g % 30 + 1
//                                 components named g<g>_<k>, one generation more each time
import BluetoothCore
import BluetoothSMP
import FoundationEssentials
import Logging
import StateFile

@testable import BluetoothHost
@testable import Gateway
@testable import MQTTMirror
@testable import MQTTService

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

/// Any other failure: exit 4, which the test reports with this text.
func failed(_ reason: String) -> Never {
    complain(reason)
    exit(4)
}

/// One line on stdout, with one write(2) (atomic on a pipe), so the test sees whole lines only and
/// every line the probe printed before it was killed.
func report(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var written = 0
    while written < bytes.count {
        let count = bytes[written...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        guard count > 0 else { failed("cannot write stdout") }
        written += count
    }
}

func rewriteCounter(_ path: String) throws {
    var first = true
    while true {
        var total: UInt64 = 0
        if let bytes = try StateFile.read(path) {
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.hasSuffix("\n"), let value = UInt64(text.dropLast()) else { torn("\"\(text)\"") }
            total = value
        }
        if first { report("found \(total)") }
        first = false
        try StateFile.write(Array("\(total + 1)\n".utf8), to: path)
        report("saved \(total + 1)")
    }
}

func rewriteBonds(_ directory: String) throws {
    let store = BondStore(directory: directory)
    let key = LongTermKey(
        key: SecretKey(mostSignificantFirst: [UInt8](repeating: 0x5A, count: 16)), keySize: 16,
        authenticated: false, secureConnections: true)
    var first = true
    while true {
        let registry: BondRegistry
        do {
            registry = try store.load()
        } catch {
            torn("\(error)")
        }
        let found = UInt16(registry.bonds.first?.clientConfigurations[1] ?? 0)
        if registry.bonds.count != (registry.bonds.isEmpty ? 0 : Int(found) % 40 + 1) {
            torn("generation \(found) with \(registry.bonds.count) bonds")
        }
        if first { report("found \(found)") }
        first = false
        let generation = found &+ 1
        var next = BondRegistry()
        for index in 0..<(Int(generation) % 40 + 1) {
            let address = BluetoothAddress(littleEndianBytes: [UInt8(index), 0, 0, 0, 0, 0xC0], kind: .random)
            next.insert(
                Bond(
                    identity: address, longTermKey: key,
                    clientConfigurations: index == 0 ? [1: generation] : [2: 1]))
        }
        try store.save(next)
        report("saved \(generation)")
    }
}

func writeOutbox(_ directory: String, run: String) throws {
    let writer = StateFileWriter()
    let logger = Logger(label: "probe") { _ in SwiftLogNoOpLogHandler() }
    var number = 0
    /// Appended events not yet reported durable, oldest first.
    var notDurable: [OutboxEntry] = []
    while true {
        // Opening replays the journal and compacts it (on the disk, fsynced, by the writer), as
        // a restart does: once the writer is done with it, every event appended so far and not
        // acknowledged is durable. After the writer has finished with the outbox before, as the
        // mirror runner's replacement waits for it.
        writer.waitUntilIdle()
        let outbox = try MQTTOutbox(directory: URL(fileURLWithPath: directory), writer: writer, logger: logger)
        writer.waitUntilIdle()
        for entry in notDurable { report("durable \(entry.message.topic)") }
        notDurable = []
        for _ in 0..<100 {
            let topic = "probe/\(run)/\(number)"
            number += 1
            notDurable.append(try outbox.append(MQTTMessage(topic: topic, text: String(repeating: topic + ";", count: 8))))
            outbox.sync()
            report("appended \(topic)")
            let durable = outbox.durableSequence
            while let oldest = notDurable.first, oldest.sequence <= durable {
                report("durable \(oldest.message.topic)")
                notDurable.removeFirst()
            }
            while outbox.count > 20, let oldest = outbox.pending.first {
                try outbox.acknowledge(oldest.sequence)
                report("acknowledged \(oldest.message.topic)")
            }
        }
    }
}

func takeBTHomeCounters(_ directory: String) {
    while true {
        var counter: BTHomeCounter
        do {
            counter = try BTHomeCounter.load(stateDirectory: directory)
        } catch {
            torn("\(error)")
        }
        for _ in 0..<Int.random(in: 0..<2048) {
            if let taken = counter.take() { report("\(taken)") }
            // Written at once: the advertiser writes off the event loop and takes no counter it
            // has not reserved meanwhile, which comes to the same on disk.
            if let limit = counter.reservationDue() {
                do {
                    try StateFile.write(BTHomeCounter.contents(limit), to: counter.path)
                } catch {
                    failed("\(error)")
                }
                counter.reserved(limit, written: true)
            }
        }
    }
}

func makeAddresses(kept: String, in directory: String) async {
    let writer = StateFileWriter()
    do {
        let keptAddress = try await StaticAddressStore(directory: kept).loadOrCreate(writer: writer)
        report("kept \(keptAddress)")
        for index in 0... {
            let address = try await StaticAddressStore(directory: directory + "/\(index)").loadOrCreate(writer: writer)
            report("made \(index) \(address)")
        }
    } catch {
        torn("\(error)")
    }
}

func rewriteDiscoveryRecord(_ directory: String) {
    let writer = StateFileWriter()
    let file = PublishedComponentsFile(stateDirectory: directory, writer: writer)
    while true {
        var generation = 0
        do {
            if let components = try file.load() {
                let found = components.first.flatMap { Int($0.id.dropFirst().prefix { $0 != "_" }) }
                guard let found, components == discoveryComponents(generation: found) else { torn("\(components.sorted())") }
                generation = found
            }
        } catch {
            torn("\(error)")
        }
        file.save(discoveryComponents(generation: generation + 1)) { error in
            if let error { failed("\(error)") }
        }
        writer.waitUntilIdle()
    }
}

/// Generation `generation` of the discovery record: `generation % 30 + 1` components.
func discoveryComponents(generation: Int) -> Set<HomeAssistantComponent> {
    Set(
        (0...(generation % 30)).map {
            HomeAssistantComponent(platform: $0.isMultiple(of: 2) ? "sensor" : "switch", id: "g\(generation)_\($0)")
        })
}

let arguments = CommandLine.arguments
do {
    switch (arguments.dropFirst().first, arguments.count) {
    case ("counter", 3): try rewriteCounter(arguments[2])
    case ("bonds", 3): try rewriteBonds(arguments[2])
    case ("outbox", 4): try writeOutbox(arguments[2], run: arguments[3])
    case ("bthome", 3): takeBTHomeCounters(arguments[2])
    case ("address", 4): await makeAddresses(kept: arguments[2], in: arguments[3])
    case ("discovery", 3): rewriteDiscoveryRecord(arguments[2])
    default:
        complain("usage: StateFileProbe counter FILE | bonds DIR | outbox DIR RUN | bthome DIR | address KEPT DIR | discovery DIR")
        exit(2)
    }
} catch {
    failed("\(error)")
}
