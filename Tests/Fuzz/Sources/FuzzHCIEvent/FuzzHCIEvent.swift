import BluetoothHCI

/// Any bytes as an HCI event packet (event code, length, parameters): decoding either throws
/// an `HCIDecodingError` or gives an event whose encoding decodes to the same event. It must
/// never trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let event = try? HCIEvent(decoding: bytes[...]) else { return 0 }
    guard let again = try? HCIEvent(decoding: event.encoded[...]), again == event else {
        fatalError("\(event) does not survive encoding and decoding again")
    }
    return 0
}
