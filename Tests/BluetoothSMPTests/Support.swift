import BluetoothCore
import TestHarness

/// Bytes written as hex, as the specification's sample data is (spaces allowed).
func hex(_ text: String) -> [UInt8] { [UInt8](hexString: text)! }
