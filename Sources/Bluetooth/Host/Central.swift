import BluetoothCore

/// One connected central. Identity is per connection: the same phone connecting again is a new
/// `Central` (its handle may be reused by the controller, its `connectionID` never is).
public struct Central: Hashable, Sendable, CustomStringConvertible {
    public let connectionID: UInt64
    public let handle: UInt16
    public let address: BluetoothAddress

    public init(connectionID: UInt64, handle: UInt16, address: BluetoothAddress) {
        self.connectionID = connectionID
        self.handle = handle
        self.address = address
    }

    public var description: String { "\(address) (handle 0x\(String(handle, radix: 16)))" }
}
