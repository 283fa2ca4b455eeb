import BluetoothATT
import BluetoothCore
import Testing
@testable import BluetoothGATT

/// SplitMix64: a small seeded generator, so every failure reproduces from its seed.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random and mutated PDUs through the server from three centrals, interleaved with the program
/// and host calls (updates, credits, time, service changes, reconnections). After every PDU:
/// a request got exactly one answer (its response or an Error Response naming it), anything else
/// got none, no answer exceeds the MTU, and every central's state is within its bounds.
///
/// Four runs of 250,000 PDUs (1,000,000 in all), each from its own seed, run in parallel.
@Suite struct FuzzTests {
    @Test(arguments: [0x5EED_0001, 0x5EED_0002, 0x5EED_0003, 0x5EED_0004] as [UInt64])
    func quarterMillionPDUs(seed: UInt64) throws {
        var fuzzer = try Fuzzer(seed: seed)
        for _ in 0..<250_000 { try fuzzer.step() }
        #expect(fuzzer.requests > 100_000, "the generator must mostly produce requests")
        #expect(fuzzer.successes > 20_000, "and many of them must succeed")
    }
}

private struct Fuzzer {
    var random: SeededGenerator
    let server: GATTServer
    let centrals = [CentralID(1), CentralID(2), CentralID(3)]
    var now = ContinuousClock.now
    var notifiable: [PublishedCharacteristic]
    var removable: GATTServiceID?
    var requests = 0
    var successes = 0
    let limits = GATTServer.Configuration(preparedWriteQueueLimit: 8, indicationQueueLimit: 4)

    /// Requests and commands the templates build (then mutate).
    static let opcodes: [UInt8] = [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20,
                                   0x52, 0xD2, 0x1E, 0x1E, 0x12, 0x12]

    init(seed: UInt64) throws {
        random = SeededGenerator(state: seed)
        let (server, _, services) = try Fixture.server(configuration: limits)
        self.server = server
        notifiable = services.flatMap(\.characteristics).filter { $0.clientConfigurationHandle != nil }
        for id in centrals { server.connect(id) }
        _ = server.takeOutput()
    }

    mutating func step() throws {
        let central = centrals[Int.random(in: 0..<centrals.count, using: &random)]
        if Int.random(in: 0..<50, using: &random) == 0 { try hostOrProgramCall(central) }

        let pdu = makePDU()
        let before = server.snapshot(of: central)!
        server.receive(pdu, from: central, now: now)
        let after = server.snapshot(of: central)!
        let answers = server.takeOutput().compactMap { item -> [UInt8]? in
            guard case let .send(bytes, to) = item, to == central, let opcode = bytes.first,
                  opcode != 0x1B, opcode != 0x1D else { return nil }
            return bytes
        }
        let expectsAnswer = !pdu.isEmpty && ATTOpcode.isRequest(pdu[0]) && !before.isClosed && !after.isClosed
        if expectsAnswer {
            requests += 1
            guard answers.count == 1 else {
                Issue.record("request \(pdu.hexString) got \(answers.count) answers: \(answers.map(\.hexString))")
                throw FuzzFailure()
            }
            let answer = answers[0]
            let named = answer[0] == 0x01 ? (answer.count == 5 ? answer[1] : nil) : answer[0] - 1
            if named != pdu[0] { Issue.record("request \(pdu.hexString) answered by \(answer.hexString)") }
            if answer[0] != 0x01 { successes += 1 }
            if answer.count > Int(before.mtu) { Issue.record("answer of \(answer.count) bytes exceeds MTU \(before.mtu)") }
        } else if !answers.isEmpty {
            Issue.record("unanswerable \(pdu.hexString) got \(answers.map(\.hexString))")
            throw FuzzFailure()
        }
        try checkInvariants(after)
    }

    /// Something the program or host does between PDUs.
    mutating func hostOrProgramCall(_ central: CentralID) throws {
        switch Int.random(in: 0..<6, using: &random) {
        case 0:
            server.addTransmitCredits(Int.random(in: 0...4, using: &random), now: now)
        case 1:
            let characteristic = notifiable[Int.random(in: 0..<notifiable.count, using: &random)]
            if server.database.services[characteristic.service] != nil {
                let value = (0..<Int.random(in: 0...600, using: &random)).map { UInt8(truncatingIfNeeded: $0) }
                _ = try server.updateValue(value, for: characteristic, now: now)
            }
        case 2:
            now += .seconds(Int.random(in: 0...12, using: &random))
            server.expireTransactions(now: now)
        case 3:
            if let id = removable {
                try server.removeService(id, now: now)
                removable = nil
            } else {
                removable = try server.addService(Fixture.battery, now: now).id
            }
        case 4:
            server.disconnect(central)
            server.connect(central, security: Bool.random(using: &random) ? .unencrypted
                           : LinkSecurity(isEncrypted: true, isAuthenticated: Bool.random(using: &random)))
        default:
            server.setSecurity(LinkSecurity(isEncrypted: Bool.random(using: &random),
                                            encryptionKeySize: Int.random(in: 7...16, using: &random)), for: central)
        }
        _ = server.takeOutput()
    }

    mutating func makePDU() -> [UInt8] {
        if Int.random(in: 0..<4, using: &random) == 0 {
            // Pure noise.
            return (0..<Int.random(in: 0...24, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        }
        let opcode = Self.opcodes[Int.random(in: 0..<Self.opcodes.count, using: &random)]
        var pdu: [UInt8] = [opcode]
        switch opcode {
        case 0x02: pdu += u16(UInt16.random(in: 0...600, using: &random))
        case 0x04, 0x08, 0x10, 0x06:
            pdu += u16(handle()) + u16(Bool.random(using: &random) ? 0xFFFF : handle())
            let types: [UInt16] = [0x2800, 0x2801, 0x2802, 0x2803, 0x2902, 0x2A37, 0x2B2A, 0x2A00]
            if opcode != 0x04 { pdu += u16(types[Int.random(in: 0..<types.count, using: &random)]) }
            if opcode == 0x06 { pdu += [0x0D, 0x18] }
        case 0x0A: pdu += u16(handle())
        case 0x0C: pdu += u16(handle()) + u16(UInt16.random(in: 0...120, using: &random))
        case 0x0E, 0x20:
            for _ in 0..<Int.random(in: 2...5, using: &random) { pdu += u16(handle()) }
        case 0x12, 0x52:
            pdu += u16(handle()) + value()
        case 0x16: pdu += u16(handle()) + u16(UInt16.random(in: 0...520, using: &random)) + value()
        case 0x18: pdu += [UInt8.random(in: 0...1, using: &random)]
        case 0xD2: pdu += u16(handle()) + value() + [UInt8](repeating: 0, count: 12)
        default: break
        }
        // Mutate about one in three: flip a byte, cut, or extend.
        switch Int.random(in: 0..<9, using: &random) {
        case 0 where pdu.count > 1: pdu[Int.random(in: 1..<pdu.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
        case 1: pdu.removeLast(Int.random(in: 0...pdu.count - 1, using: &random))
        case 2: pdu += [UInt8.random(in: 0...255, using: &random)]
        default: break
        }
        return pdu
    }

    mutating func handle() -> UInt16 {
        Int.random(in: 0..<10, using: &random) == 0 ? UInt16.random(in: 0...0xFFFF, using: &random)
            : UInt16.random(in: 0...50, using: &random)
    }

    mutating func value() -> [UInt8] {
        let cccdValues: [[UInt8]] = [[0x01, 0x00], [0x02, 0x00], [0x00, 0x00], [0x03, 0x00], [0x01]]
        if Bool.random(using: &random) { return cccdValues[Int.random(in: 0..<cccdValues.count, using: &random)] }
        return (0..<Int.random(in: 0...30, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    func u16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    func checkInvariants(_ state: CentralSnapshot) throws {
        guard (23...517).contains(state.mtu), state.preparedWriteCount <= limits.preparedWriteQueueLimit,
              server.transmitCredits >= 0, state.queuedIndicationCount <= limits.indicationQueueLimit + 64 else {
            Issue.record("state out of bounds: \(state)")
            throw FuzzFailure()
        }
        if state.isClosed, state.outstandingIndicationHandle != nil {
            Issue.record("a closed bearer keeps an indication outstanding")
        }
        for (handle, bits) in state.clientConfigurations {
            guard let attribute = server.database.attribute(at: handle),
                  case let .clientConfiguration(characteristic) = attribute.value else {
                Issue.record("subscription at \(handle), which is no CCCD")
                throw FuzzFailure()
            }
            var allowed: UInt16 = 0
            if characteristic.properties.contains(.notify) { allowed |= 1 }
            if characteristic.properties.contains(.indicate) { allowed |= 2 }
            if bits == 0 || bits & ~allowed != 0 { Issue.record("CCCD \(handle) holds \(bits)") }
        }
    }
}

private struct FuzzFailure: Error {}
