/// ATT error codes (Core 5.4 Vol 3 Part F 3.4.1.1, Table 3.4, and the common profile error codes
/// of the Core Specification Supplement Part B 1.2).
///
/// A struct rather than an enum: application error codes 0x80–0x9F are the program's to choose,
/// and a received Error Response may carry any byte.
public struct ATTErrorCode: Error, RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    public static let invalidPDU = ATTErrorCode(rawValue: 0x04)
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    public static let invalidOffset = ATTErrorCode(rawValue: 0x07)
    public static let insufficientAuthorization = ATTErrorCode(rawValue: 0x08)
    public static let prepareQueueFull = ATTErrorCode(rawValue: 0x09)
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    public static let attributeNotLong = ATTErrorCode(rawValue: 0x0B)
    public static let insufficientEncryptionKeySize = ATTErrorCode(rawValue: 0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(rawValue: 0x0D)
    public static let unlikelyError = ATTErrorCode(rawValue: 0x0E)
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
    public static let unsupportedGroupType = ATTErrorCode(rawValue: 0x10)
    public static let insufficientResources = ATTErrorCode(rawValue: 0x11)
    public static let databaseOutOfSync = ATTErrorCode(rawValue: 0x12)
    public static let valueNotAllowed = ATTErrorCode(rawValue: 0x13)
    /// Common profile error: a CCCD write names a mode the characteristic does not support.
    public static let cccdImproperlyConfigured = ATTErrorCode(rawValue: 0xFD)
    public static let procedureAlreadyInProgress = ATTErrorCode(rawValue: 0xFE)
    public static let outOfRange = ATTErrorCode(rawValue: 0xFF)

    /// An application error (0x80–0x9F), chosen by the program's request handlers.
    public static func application(_ code: UInt8) -> ATTErrorCode {
        precondition((0x80...0x9F).contains(code), "application errors are 0x80-0x9F")
        return ATTErrorCode(rawValue: code)
    }

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Invalid Handle", 0x02: "Read Not Permitted", 0x03: "Write Not Permitted",
            0x04: "Invalid PDU", 0x05: "Insufficient Authentication", 0x06: "Request Not Supported",
            0x07: "Invalid Offset", 0x08: "Insufficient Authorization", 0x09: "Prepare Queue Full",
            0x0A: "Attribute Not Found", 0x0B: "Attribute Not Long",
            0x0C: "Insufficient Encryption Key Size", 0x0D: "Invalid Attribute Value Length",
            0x0E: "Unlikely Error", 0x0F: "Insufficient Encryption", 0x10: "Unsupported Group Type",
            0x11: "Insufficient Resources", 0x12: "Database Out Of Sync", 0x13: "Value Not Allowed",
            0xFD: "Client Characteristic Configuration Descriptor Improperly Configured",
            0xFE: "Procedure Already in Progress", 0xFF: "Out of Range"
        ]
        let hex = "0x" + String(rawValue, radix: 16, uppercase: true)
        if let name = names[rawValue] { return "\(name) (\(hex))" }
        if (0x80...0x9F).contains(rawValue) { return "Application Error (\(hex))" }
        return "ATT error \(hex)"
    }
}
