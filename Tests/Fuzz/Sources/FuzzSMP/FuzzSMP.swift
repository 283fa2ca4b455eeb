import BluetoothCore
import BluetoothSMP
import LoopClock

/// The first byte configures the responder (bits 0-2: IO capability, bit 3: legacy pairing
/// allowed, bit 4: a fixed passkey); the rest is a script run against one connection:
///
/// - `0x00, length, bytes`: the central sends those bytes on the SMP channel;
/// - `0x01...0x07, parameter`: the host or user acts: numeric comparison answer, passkey entry,
///   encryption change, LTK request, time passing (parameter × 250 ms, then timers), reconnection,
///   security request.
///
/// Every PDU the manager sends goes to the connection it came from and decodes back to itself;
/// nothing may trap. Randomness is seeded, so every input replays exactly.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    guard let setup = input.first else { return 0 }
    let capabilities = IOCapability.allCases
    guard
        let configuration = try? SecurityConfiguration(
            ioCapability: capabilities[Int(setup & 0x07) % capabilities.count],
            fixedPasskey: setup & 0x10 != 0 ? 123_456 : nil,
            allowLegacy: setup & 0x08 != 0)
    else { fatalError("a valid security configuration was refused") }
    var manager = SecurityManager(configuration: configuration, random: SeededRandom(state: UInt64(count)))
    let handle: UInt16 = 0x0040
    let central = BluetoothAddress("C0:11:22:33:44:55", kind: .random)!
    let gateway = BluetoothAddress("DC:A6:32:00:00:01")!
    manager.connectionOpened(handle, peer: central, local: gateway)
    var now = LoopInstant(nanoseconds: 0)
    var position = 1
    while position + 1 < input.count {
        let kind = input[position] & 0x07
        let parameter = input[position + 1]
        position += 2
        let actions: [SecurityManager.Action]
        switch kind {
        case 0:
            let end = min(position + Int(parameter), input.count)
            actions = manager.receive(Array(input[position..<end]), on: handle, now: now)
            position = end
        case 1:
            actions = manager.confirmNumericComparison(on: handle, accepted: parameter & 1 != 0, now: now)
        case 2:
            actions = manager.enterPasskey(parameter == 0 ? nil : UInt32(parameter) * 3_917, on: handle, now: now)
        case 3:
            actions = manager.encryptionChanged(on: handle, enabled: parameter & 1 != 0, now: now)
        case 4:
            _ = manager.longTermKeyRequest(on: handle, ediv: UInt16(parameter), rand: UInt64(parameter))
            actions = []
        case 5:
            now += .milliseconds(250 * Int(parameter))
            actions = manager.expireTimers(now: now)
        case 6:
            manager.connectionClosed(handle)
            manager.connectionOpened(handle, peer: central, local: gateway)
            actions = []
        default:
            actions = manager.requestSecurity(on: handle, authenticated: parameter & 1 != 0, now: now)
        }
        for case .send(let to, let pdu) in actions {
            guard to == handle else { fatalError("\(pdu) sent to connection \(to)") }
            guard (try? SMPPDU(decoding: pdu.encoded)) == pdu else {
                fatalError("sent \(pdu) does not decode back: \(pdu.encoded.hexString)")
            }
        }
    }
    return 0
}

/// SplitMix64, so the "random" keys and nonces depend only on the input.
private struct SeededRandom: PairingRandomSource {
    var state: UInt64

    mutating func bytes(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for _ in 0..<count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            bytes.append(UInt8(truncatingIfNeeded: z ^ (z >> 31)))
        }
        return bytes
    }
}
