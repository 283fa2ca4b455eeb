import BluetoothCore
import ConfigReading

extension ConfigNode {
    /// A 16-bit SIG short form (`2A6E`, `0x2A6E`), 32-bit, or full 128-bit UUID.
    func uuid() -> BluetoothUUID? {
        guard let text = scalarText(expected: "a UUID") else { return nil }
        guard let uuid = BluetoothUUID(text) else { return fail("\(shown) is not a UUID") }
        return uuid
    }

    /// A mapping of the keys `ConfigReference` documents under `referencePath`.
    func mapping(_ referencePath: String, forbidden: [String: String] = [:]) -> ConfigMapping? {
        mapping(keys: ConfigReference.keys(under: referencePath), forbidden: forbidden)
    }
}
