import BluetoothATT
import BluetoothCore
import LoopClock
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
/// Four runs of 60,000 PDUs, each from its own seed, one after the other: in parallel they held
/// every thread of the test process's pool for a quarter of a minute, and tests with deadlines
/// beside them timed out. The coverage-guided fuzzing of the same server is the fuzz stage's
/// (`FuzzATTServer`, docs/testing.md).
@Suite(.serialized) struct FuzzTests {
    @Test(arguments: [0x5EED_0001, 0x5EED_0002, 0x5EED_0003, 0x5EED_0004] as [UInt64])
    func sixtyThousandPDUs(seed: UInt64) throws {
        var fuzzer = try Fuzzer(seed: seed)
        for _ in 0..<60_000 { try fuzzer.step() }
        #expect(fuzzer.requests > 24_000, "the generator must mostly produce requests")
        #expect(fuzzer.successes > 4_800, "and many of them must succeed")
    }
}

private struct Fuzzer {
    var random: SeededGenerator
    let server: GATTServer
    let centrals = [CentralID(1), CentralID(2), CentralID(3)]
    var now = serverStart
    var notifiable: [PublishedCharacteristic]
    var removable: GATTServiceID?
    var requests = 0
    var successes = 0
    let limits = GATTServer.Configuration(preparedWriteQueueLimit: 8, indicationQueueLimit: 4)

    /// Requests and commands the templates build (then mutate).
    static let opcodes: [UInt8] = [
        0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20,
        0x52, 0xD2, 0x1E, 0x1E, 0x12, 0x12
    ]

    init(seed: UInt64) throws {
        random = SeededGenerator(state: seed)
        let (server, _, services) = try Fixture.server(configuration: limits)
        self.server = server
        notifiable = services.flatMap(\.characteristics).filter { $0.clientConfigurationHandle != nil }
        for id in centrals { server.connect(id) }
        _ = server.takeOutput()
    }

    // Non-generic draws: `Int.random(in:using:)` is generic and slow in debug builds.
    mutating func below(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
    mutating func draw(_ range: ClosedRange<Int>) -> Int { range.lowerBound + below(range.count) }
    mutating func byte() -> UInt8 { UInt8(truncatingIfNeeded: random.next()) }
    mutating func coin() -> Bool { random.next() & 1 == 0 }

    mutating func step() throws {
        let central = centrals[below(centrals.count)]
        if below(50) == 0 { try hostOrProgramCall(central) }

        let pdu = makePDU()
        let state = server.central(central)!
        let (mtuBefore, closedBefore) = (state.mtu, state.isClosed)
        server.receive(pdu, from: central, now: now)
        var answers: [[UInt8]] = []
        for item in server.takeOutput() {
            switch item {
            case .send(let bytes, let to):
                // Updates are marked as such: a response never carries an update's opcode.
                if [0x1B, 0x1D].contains(bytes.first) { Issue.record("update \(bytes.hexString) sent as a response") }
                if to == central { answers.append(bytes) }
            case .sendUpdate, .event:
                break
            }
        }
        let expectsAnswer = !pdu.isEmpty && ATTOpcode.isRequest(pdu[0]) && !closedBefore && !state.isClosed
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
            if answer.count > Int(mtuBefore) { Issue.record("answer of \(answer.count) bytes exceeds MTU \(mtuBefore)") }
        } else if !answers.isEmpty {
            Issue.record("unanswerable \(pdu.hexString) got \(answers.map(\.hexString))")
            throw FuzzFailure()
        }
        try checkInvariants(state)
    }

    /// Something the program or host does between PDUs.
    mutating func hostOrProgramCall(_ central: CentralID) throws {
        switch below(6) {
        case 0:
            server.addTransmitCredits(draw(0...4), now: now)
        case 1:
            let characteristic = notifiable[below(notifiable.count)]
            if server.database.services[characteristic.service] != nil {
                let value = (0..<draw(0...600)).map { UInt8(truncatingIfNeeded: $0) }
                _ = try server.updateValue(value, for: characteristic, now: now)
            }
        case 2:
            now += .seconds(draw(0...12))
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
            server.connect(
                central,
                security: coin()
                    ? .unencrypted
                    : LinkSecurity(isEncrypted: true, isAuthenticated: coin()))
        default:
            server.setSecurity(
                LinkSecurity(
                    isEncrypted: coin(),
                    encryptionKeySize: draw(7...16)), for: central)
        }
        _ = server.takeOutput()
    }

    mutating func makePDU() -> [UInt8] {
        if below(4) == 0 {
            // Pure noise.
            return bytes(draw(0...24))
        }
        let opcode = Self.opcodes[below(Self.opcodes.count)]
        var pdu: [UInt8] = [opcode]
        switch opcode {
        case 0x02: pdu += u16(UInt16(draw(0...600)))
        case 0x04, 0x08, 0x10, 0x06:
            pdu += u16(handle()) + u16(coin() ? 0xFFFF : handle())
            let types: [UInt16] = [0x2800, 0x2801, 0x2802, 0x2803, 0x2902, 0x2A37, 0x2B2A, 0x2A00]
            if opcode != 0x04 { pdu += u16(types[below(types.count)]) }
            if opcode == 0x06 { pdu += [0x0D, 0x18] }
        case 0x0A: pdu += u16(handle())
        case 0x0C: pdu += u16(handle()) + u16(UInt16(draw(0...120)))
        case 0x0E, 0x20:
            for _ in 0..<draw(2...5) { pdu += u16(handle()) }
        case 0x12, 0x52:
            pdu += u16(handle()) + value()
        case 0x16: pdu += u16(handle()) + u16(UInt16(draw(0...520))) + value()
        case 0x18: pdu += [UInt8(below(2))]
        case 0xD2: pdu += u16(handle()) + value() + [UInt8](repeating: 0, count: 12)
        default: break
        }
        // Mutate about one in three: flip a byte, cut, or extend.
        switch below(9) {
        case 0 where pdu.count > 1: pdu[1 + below(pdu.count - 1)] ^= max(byte(), 1)
        case 1: pdu.removeLast(below(pdu.count))
        case 2: pdu += [byte()]
        default: break
        }
        return pdu
    }

    mutating func handle() -> UInt16 {
        below(10) == 0
            ? UInt16(truncatingIfNeeded: random.next())
            : UInt16(below(51))
    }

    mutating func value() -> [UInt8] {
        if coin() { return Self.cccdValues[below(Self.cccdValues.count)] }
        return bytes(draw(0...30))
    }

    static let cccdValues: [[UInt8]] = [[0x01, 0x00], [0x02, 0x00], [0x00, 0x00], [0x03, 0x00], [0x01]]

    /// Random bytes, a loop rather than `map` (which costs a lot in debug builds).
    mutating func bytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for _ in 0..<count { bytes.append(byte()) }
        return bytes
    }

    func u16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    func checkInvariants(_ state: CentralState) throws {
        guard (23...517).contains(state.mtu), state.preparedWrites.count <= limits.preparedWriteQueueLimit,
            server.transmitCredits >= 0, state.indicationQueue.count <= limits.indicationQueueLimit + 64
        else {
            Issue.record("state out of bounds: \(state.snapshot)")
            throw FuzzFailure()
        }
        if state.isClosed, state.outstandingIndication != nil {
            Issue.record("a closed bearer keeps an indication outstanding")
        }
        for (handle, bits) in state.clientConfigurations.dictionary {
            guard let attribute = server.database.attribute(at: handle),
                case .clientConfiguration(let characteristic) = attribute.value
            else {
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
