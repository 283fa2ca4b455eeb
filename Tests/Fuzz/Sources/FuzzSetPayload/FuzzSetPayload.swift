import Values

/// Encodings a `/set` payload can be parsed for: every format, with and without an exponent.
private let encodings: [ValueEncoding] = ValueFormat.allCases.flatMap { format -> [ValueEncoding] in
    var list: [ValueEncoding] = []
    if let plain = try? ValueEncoding(format, maximumLength: 16) { list.append(plain) }
    if format.isNumeric, let scaled = try? ValueEncoding(format, exponent: -2, maximumLength: 16) {
        list.append(scaled)
    }
    return list
}

/// The first byte picks the characteristic's encoding, the rest is the MQTT payload. A payload is
/// either accepted — and then its bytes decode back to a value of the same kind — or refused with
/// a `ValueError`; it must never trap.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    guard count > 0 else { return 0 }
    let input = UnsafeRawBufferPointer(start: start, count: count)
    let encoding = encodings[Int(input[0]) % encodings.count]
    let payload = Array(input.dropFirst())
    guard let parsed = try? ValueJSON.parseSet(payload, encoding: encoding) else { return 0 }
    guard let decoded = try? encoding.decode(parsed.bytes), decoded.kindName == parsed.value.kindName else {
        fatalError("accepted /set payload does not round-trip for \(encoding): \(parsed)")
    }
    return 0
}
