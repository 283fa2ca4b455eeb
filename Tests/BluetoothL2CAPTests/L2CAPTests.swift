import BluetoothCore
import BluetoothHCI
import Testing

@testable import BluetoothL2CAP

extension L2CAPFrame {
    /// Every ACL fragment of the frame, each its own packet: what the ACL scheduler sends, one
    /// fragment at a time.
    fileprivate func fragments(handle: UInt16, maxFragmentLength: Int) -> [HCIACLPacket] {
        var packets: [HCIACLPacket] = []
        var offset = 0
        while offset < encodedLength {
            let fragment = fragment(from: offset, handle: handle, maxFragmentLength: maxFragmentLength)
            offset += fragment.count
            packets.append(fragment.packet)
        }
        return packets
    }
}

struct L2CAPFrameTests {
    @Test func basicFrameLayout() {
        // ATT Exchange MTU Request (0x02, MTU 517) on CID 0x0004 (Core Vol 3 Part A 3.1).
        #expect(
            L2CAPFrame(channel: 0x0004, payload: [0x02, 0x05, 0x02]).encoded
                == [0x03, 0x00, 0x04, 0x00, 0x02, 0x05, 0x02])
    }

    @Test func fragmentsBySizeWithBoundaryFlags() {
        let frame = L2CAPFrame(channel: 0x0004, payload: Array(repeating: 0xAB, count: 300))
        let fragments = frame.fragments(handle: 0x40, maxFragmentLength: 27)
        #expect(fragments.count == 12)  // 304 bytes in 27-byte pieces
        #expect(fragments.first?.boundary == .firstNonFlushable)
        #expect(fragments.dropFirst().allSatisfy { $0.boundary == .continuing && $0.handle == 0x40 })
        #expect(fragments.dropLast().allSatisfy { $0.data.count == 27 })
        #expect(fragments.last?.data.count == 304 - 11 * 27)
        #expect(fragments.flatMap(\.data) == frame.encoded)
    }

    /// Fragments shorter than the basic header split it, each carrying its own part of it.
    @Test(arguments: 1...6) func fragmentsOfAnyLengthCarryTheEncodedFrame(maxFragmentLength: Int) {
        let frame = L2CAPFrame(channel: 0x0104, payload: [0x1B, 0x2A, 0x00, 0x7F])
        let packets = frame.fragments(handle: 7, maxFragmentLength: maxFragmentLength)
        #expect(packets.flatMap(\.data) == frame.encoded)
        #expect(packets.dropLast().allSatisfy { $0.data.count == maxFragmentLength })
        #expect(packets.first?.boundary == .firstNonFlushable)
        #expect(packets.dropFirst().allSatisfy { $0.boundary == .continuing })
    }

    /// A full head makes the header and head eight bytes, the whole of a fragment's prefix.
    @Test(arguments: 1...10) func aFullHeadFillsTheFragmentsPrefix(maxFragmentLength: Int) {
        let head = L2CAPFrame.Head().appending(UInt8(0x12)).appending(UInt16(0x3456)).appending(UInt8(0x78))
        let frame = L2CAPFrame(channel: 0x0004, head: head, body: [0x9A])
        #expect(frame.encoded == [0x05, 0x00, 0x04, 0x00, 0x12, 0x56, 0x34, 0x78, 0x9A])
        #expect(frame.fragments(handle: 7, maxFragmentLength: maxFragmentLength).flatMap(\.data) == frame.encoded)
    }

    /// A frame whose payload starts with a head (an ATT update's opcode and handle) before its
    /// body is the same frame on air as one with the payload in one array, however it is cut.
    @Test(arguments: 1...9) func aHeadGoesOutBeforeTheBody(maxFragmentLength: Int) {
        let frame = L2CAPFrame(
            channel: 0x0004, head: L2CAPFrame.Head().appending(UInt8(0x1B)).appending(UInt16(0x002A)), body: [0x7F, 0x80])
        let whole = L2CAPFrame(channel: 0x0004, payload: [0x1B, 0x2A, 0x00, 0x7F, 0x80])
        #expect(frame == whole)
        #expect(frame.encodedLength == 9)
        #expect(frame.encoded == [0x05, 0x00, 0x04, 0x00, 0x1B, 0x2A, 0x00, 0x7F, 0x80])
        #expect(
            frame.fragments(handle: 7, maxFragmentLength: maxFragmentLength)
                == whole.fragments(handle: 7, maxFragmentLength: maxFragmentLength))
    }

    @Test func reassemblesWhatWasFragmented() {
        var reassembler = L2CAPReassembler()
        let frames = [
            L2CAPFrame(channel: 0x0004, payload: Array(0..<250)),
            L2CAPFrame(channel: 0x0005, payload: [0x01, 0x02]),
            L2CAPFrame(channel: 0x0004, payload: [])
        ]
        var out: [L2CAPFrame] = []
        for frame in frames {
            for fragment in frame.fragments(handle: 1, maxFragmentLength: 27) {
                let result = reassembler.push(fragment)
                #expect(result.problems.isEmpty)
                out += result.frames
            }
        }
        #expect(out == frames)
    }

    @Test func headerSplitAcrossFragments() {
        var reassembler = L2CAPReassembler()
        #expect(reassembler.push(HCIACLPacket(handle: 1, boundary: .firstFlushable, data: [0x02, 0x00, 0x04])).frames.isEmpty)
        let result = reassembler.push(HCIACLPacket(handle: 1, boundary: .continuing, data: [0x00, 0xAA, 0xBB]))
        #expect(result.frames == [L2CAPFrame(channel: 4, payload: [0xAA, 0xBB])])
    }

    @Test func problemsAreNamedAndLaterFramesStillArrive() {
        var reassembler = L2CAPReassembler()
        let stray = reassembler.push(HCIACLPacket(handle: 1, boundary: .continuing, data: [1, 2, 3]))
        #expect(stray.problems == [.unexpectedContinuation(byteCount: 3)])

        _ = reassembler.push(HCIACLPacket(handle: 1, boundary: .firstFlushable, data: [0x0A, 0x00, 0x04, 0x00, 1]))
        let restarted = reassembler.push(
            HCIACLPacket(
                handle: 1, boundary: .firstFlushable,
                data: [0x01, 0x00, 0x04, 0x00, 9]))
        #expect(restarted.problems == [.incompleteFrameDropped(received: 1, expected: 10)])
        #expect(restarted.frames == [L2CAPFrame(channel: 4, payload: [9])])

        let overlong = reassembler.push(
            HCIACLPacket(
                handle: 1, boundary: .firstFlushable,
                data: [0x01, 0x00, 0x04, 0x00, 9, 9]))
        #expect(overlong.problems == [.overlongFrame(declared: 1, received: 2)])
        #expect(overlong.frames.isEmpty)
    }
}

struct LESignalingTests {
    @Test func unknownCommandGetsCommandRejectNotUnderstood() {
        var channel = LESignalingChannel()
        // An Information Request (0x0A) is BR/EDR-only: not understood on LE.
        let outcome = channel.receive([0x0A, 0x07, 0x02, 0x00, 0x02, 0x00])
        #expect(outcome == .reply([0x01, 0x07, 0x02, 0x00, 0x00, 0x00]))
    }

    @Test func parameterUpdateRequestFromTheCentralIsRejected() {
        var channel = LESignalingChannel()
        let outcome = channel.receive([0x12, 0x03, 0x08, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xF4, 0x01])
        #expect(outcome == .reply([0x01, 0x03, 0x02, 0x00, 0x00, 0x00]))
    }

    @Test func identifierZeroAndMalformedAreDropped() {
        var channel = LESignalingChannel()
        #expect(channel.receive([0x0A, 0x00, 0x00, 0x00]) == .ignored)
        #expect(channel.receive([0x0A, 0x01, 0x05, 0x00]) == .malformed(byteCount: 4))
        #expect(channel.receive([0x0A]) == .malformed(byteCount: 1))
    }

    @Test func parameterUpdateRequestAndItsResponse() {
        var channel = LESignalingChannel()
        let request = channel.requestParameterUpdate(
            ConnectionParameters(
                intervalMin: 0x0018, intervalMax: 0x0028, latency: 0, supervisionTimeout: 0x01F4))
        // Code 0x12, identifier 1, length 8, then min, max, latency, timeout (Vol 3 Part A 4.20).
        #expect(request == [0x12, 0x01, 0x08, 0x00, 0x18, 0x00, 0x28, 0x00, 0x00, 0x00, 0xF4, 0x01])
        #expect(channel.receive([0x13, 0x09, 0x02, 0x00, 0x00, 0x00]) == .ignored)  // not our identifier
        #expect(channel.receive([0x13, 0x01, 0x02, 0x00, 0x01, 0x00]) == .parameterUpdateAnswered(accepted: false))

        let second = channel.requestParameterUpdate(
            ConnectionParameters(
                intervalMin: 6, intervalMax: 6, latency: 0, supervisionTimeout: 100))
        #expect(second[1] == 0x02)
        #expect(channel.receive([0x13, 0x02, 0x02, 0x00, 0x00, 0x00]) == .parameterUpdateAnswered(accepted: true))
    }

    @Test func commandRejectOfOurRequestIsReported() {
        var channel = LESignalingChannel()
        _ = channel.requestParameterUpdate(
            ConnectionParameters(
                intervalMin: 6, intervalMax: 6, latency: 0,
                supervisionTimeout: 100))
        #expect(channel.receive([0x01, 0x01, 0x02, 0x00, 0x00, 0x00]) == .rejected(identifier: 1))
    }
}
