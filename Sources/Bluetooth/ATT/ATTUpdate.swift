/// A Handle Value Notification or Indication as the server sends it: its opcode and handle, and
/// the attribute value as the caller's array, shared rather than copied into an encoded PDU. The
/// bearer puts the fixed fields before the value when the frame goes out, so a notification makes
/// no array of its own (Core Vol 3 Part F 3.4.7.1, 3.4.7.2).
public struct ATTUpdate: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case notification, indication
    }

    public var kind: Kind
    public var handle: UInt16
    public var value: [UInt8]

    public init(_ kind: Kind, handle: UInt16, value: [UInt8]) {
        self.kind = kind
        self.handle = handle
        self.value = value
    }

    public var opcode: ATTOpcode {
        switch kind {
        case .notification: .handleValueNotification
        case .indication: .handleValueIndication
        }
    }

    /// The PDU this update is.
    public var pdu: ATTPDU {
        switch kind {
        case .notification: .handleValueNotification(handle: handle, value: value)
        case .indication: .handleValueIndication(handle: handle, value: value)
        }
    }

    /// The PDU's bytes on air, opcode first.
    public var encoded: [UInt8] { pdu.encoded }
}
