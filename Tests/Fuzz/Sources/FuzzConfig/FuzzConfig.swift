import Config

/// Any bytes as a configuration file: the loader either returns a configuration or throws a
/// `ConfigError`; it must never trap, hang or leak.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let yaml = String(decoding: UnsafeRawBufferPointer(start: start, count: count), as: UTF8.self)
    _ = try? ConfigLoader.load(yaml: yaml, source: "fuzz.yaml")
    return 0
}
