import BluetoothHCI

/// The first byte sets how the rest of the input is cut into reads (1...255 bytes each; 0 =
/// one read), the rest is an H4 byte stream. However the stream is cut, the framer must return
/// the same packets as when it gets the stream in one read, and hold back the same bytes; an
/// unknown indicator byte throws and ends the stream. It must never trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let stream = Array(input.dropFirst())
    let readLength = input[0] == 0 ? max(stream.count, 1) : Int(input[0])

    var whole = H4Framer()
    var wholePackets: [HCIPacket] = []
    let expected: [HCIPacket]?
    do {
        try whole.push(stream[...]) {
            wholePackets.append($0)
            return true
        }
        expected = wholePackets
    } catch {
        expected = nil
    }

    var chunked = H4Framer()
    var packets: [HCIPacket] = []
    var offset = 0
    do {
        while offset < stream.count {
            let end = min(offset + readLength, stream.count)
            try chunked.push(stream[offset..<end]) {
                packets.append($0)
                return true
            }
            offset = end
        }
    } catch {
        // The stream went out of step; the one-read framer must have seen the same.
        guard expected == nil else { fatalError("only the chunked framer threw \(error)") }
        return 0
    }
    guard let expected else { fatalError("only the one-read framer threw") }
    guard packets == expected, chunked.pendingByteCount == whole.pendingByteCount else {
        fatalError("cutting the stream into \(readLength)-byte reads changed the packets")
    }
    return 0
}
