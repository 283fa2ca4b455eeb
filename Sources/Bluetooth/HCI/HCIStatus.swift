/// HCI status and error codes (Core Vol 1 Part F 1.3), the ones gattway names in logs.
public struct HCIStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let success = HCIStatus(rawValue: 0x00)
    public static let unknownCommand = HCIStatus(rawValue: 0x01)
    public static let unknownConnection = HCIStatus(rawValue: 0x02)
    public static let hardwareFailure = HCIStatus(rawValue: 0x03)
    public static let commandDisallowed = HCIStatus(rawValue: 0x0C)
    public static let connectionTimeout = HCIStatus(rawValue: 0x08)
    public static let invalidParameters = HCIStatus(rawValue: 0x12)
    public static let remoteUserTerminated = HCIStatus(rawValue: 0x13)
    public static let remoteLowResources = HCIStatus(rawValue: 0x14)
    public static let remotePowerOff = HCIStatus(rawValue: 0x15)
    public static let localHostTerminated = HCIStatus(rawValue: 0x16)
    public static let unsupportedRemoteFeature = HCIStatus(rawValue: 0x1A)
    public static let unsupportedParameterValue = HCIStatus(rawValue: 0x11)
    public static let unspecifiedError = HCIStatus(rawValue: 0x1F)
    public static let advertisingTimeout = HCIStatus(rawValue: 0x3C)
    public static let connectionFailedToEstablish = HCIStatus(rawValue: 0x3E)
    public static let limitReached = HCIStatus(rawValue: 0x43)

    public var description: String {
        let names: [UInt8: String] = [
            0x00: "Success", 0x01: "Unknown HCI Command", 0x02: "Unknown Connection Identifier",
            0x03: "Hardware Failure", 0x08: "Connection Timeout", 0x0C: "Command Disallowed",
            0x11: "Unsupported Feature or Parameter Value", 0x12: "Invalid HCI Command Parameters",
            0x13: "Remote User Terminated Connection", 0x14: "Remote Device Terminated (Low Resources)",
            0x15: "Remote Device Terminated (Power Off)", 0x16: "Connection Terminated By Local Host",
            0x1A: "Unsupported Remote Feature", 0x1F: "Unspecified Error",
            0x3C: "Advertising Timeout", 0x3E: "Connection Failed to be Established",
            0x43: "Limit Reached"
        ]
        let hex = String(rawValue, radix: 16)
        let code = "0x" + (rawValue < 0x10 ? "0" : "") + hex
        return names[rawValue].map { "\($0) (\(code))" } ?? "HCI status \(code)"
    }
}
