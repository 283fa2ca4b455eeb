import BluetoothHCI
import BluetoothL2CAP

/// The input is a series of ACL fragments of one connection, each `flags, length, data`
/// (flags bits 0-1: the packet boundary flag; 0b11, which LE does not use, is read as
/// continuing). The reassembler rebuilds L2CAP frames; frames on the signaling channel go to
/// the LE signaling handler. A frame must carry exactly the payload length its header declared;
/// nothing may trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: start, count: count)
    var reassembler = L2CAPReassembler()
    var signaling = LESignalingChannel()
    var position = 0
    while position + 1 < input.count {
        let boundary = HCIACLPacket.Boundary(rawValue: input[position] & 0x03) ?? .continuing
        let end = min(position + 2 + Int(input[position + 1]), input.count)
        let packet = HCIACLPacket(handle: 0x0040, boundary: boundary, data: Array(input[(position + 2)..<end]))
        position = end
        let (frames, _) = reassembler.push(packet)
        for frame in frames {
            if frame.channel == L2CAPChannel.leSignaling { _ = signaling.receive(frame.payload) }
            // Re-fragmenting and reassembling a frame gives the frame back.
            var again = L2CAPReassembler()
            var rebuilt: [L2CAPFrame] = []
            var offset = 0
            while offset < frame.encodedLength {
                let fragment = frame.fragment(from: offset, handle: 0x0040, maxFragmentLength: 27)
                offset += fragment.count
                rebuilt += again.push(fragment.packet).frames
            }
            guard rebuilt == [frame] else { fatalError("\(frame) does not survive fragmentation") }
        }
    }
    return 0
}
