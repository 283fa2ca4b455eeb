import BluetoothCore

/// The IO capabilities a device declares in its pairing features (Core Vol 3 Part H 3.5.1, Table 3.4).
public enum IOCapability: UInt8, Sendable, Codable, CaseIterable {
    case displayOnly = 0x00
    case displayYesNo = 0x01
    case keyboardOnly = 0x02
    case noInputNoOutput = 0x03
    case keyboardDisplay = 0x04
}

/// The AuthReq octet (Vol 3 Part H 3.5.1, Figure 3.3). Reserved bits are kept as received.
public struct AuthenticationRequirements: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags = 0b01; 0b00 is "No Bonding", the other two values are reserved.
    public static let bonding = AuthenticationRequirements(rawValue: 0x01)
    public static let mitm = AuthenticationRequirements(rawValue: 0x04)
    public static let secureConnections = AuthenticationRequirements(rawValue: 0x08)
    public static let keypress = AuthenticationRequirements(rawValue: 0x10)
    public static let ct2 = AuthenticationRequirements(rawValue: 0x20)
}

/// The key distribution fields (Vol 3 Part H 3.6.1, Figure 3.11).
public struct KeyDistribution: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Legacy pairing: LTK + EDIV/Rand. Ignored in LE Secure Connections (the LTK is derived).
    public static let encryptionKey = KeyDistribution(rawValue: 0x01)
    /// IRK + identity address.
    public static let identityKey = KeyDistribution(rawValue: 0x02)
    /// CSRK.
    public static let signingKey = KeyDistribution(rawValue: 0x04)
    /// BR/EDR link key derivation; gattway is LE only and never sets it.
    public static let linkKey = KeyDistribution(rawValue: 0x08)
}

/// The body of a Pairing Request or Pairing Response (Vol 3 Part H 3.5.1/3.5.2).
public struct PairingFeatures: Hashable, Sendable {
    public var ioCapability: IOCapability
    public var oobDataPresent: Bool
    public var authentication: AuthenticationRequirements
    public var maximumKeySize: UInt8
    public var initiatorKeys: KeyDistribution
    public var responderKeys: KeyDistribution

    public init(
        ioCapability: IOCapability, oobDataPresent: Bool = false,
        authentication: AuthenticationRequirements, maximumKeySize: UInt8 = 16,
        initiatorKeys: KeyDistribution, responderKeys: KeyDistribution
    ) {
        self.ioCapability = ioCapability
        self.oobDataPresent = oobDataPresent
        self.authentication = authentication
        self.maximumKeySize = maximumKeySize
        self.initiatorKeys = initiatorKeys
        self.responderKeys = responderKeys
    }

    /// The three octets f6 takes as IOcap, most significant first: AuthReq, OOB flag, IO capability.
    var f6IOCap: [UInt8] { [authentication.rawValue, oobDataPresent ? 1 : 0, ioCapability.rawValue] }
}

/// The reason octet of Pairing Failed (Vol 3 Part H 3.5.5, Table 3.7). A struct rather than an
/// enum so a reason this code does not know still decodes from a peer's Pairing Failed.
public struct PairingFailureReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let passkeyEntryFailed = Self(rawValue: 0x01)
    public static let oobNotAvailable = Self(rawValue: 0x02)
    public static let authenticationRequirements = Self(rawValue: 0x03)
    public static let confirmValueFailed = Self(rawValue: 0x04)
    public static let pairingNotSupported = Self(rawValue: 0x05)
    public static let encryptionKeySize = Self(rawValue: 0x06)
    public static let commandNotSupported = Self(rawValue: 0x07)
    public static let unspecifiedReason = Self(rawValue: 0x08)
    public static let repeatedAttempts = Self(rawValue: 0x09)
    public static let invalidParameters = Self(rawValue: 0x0A)
    public static let dhKeyCheckFailed = Self(rawValue: 0x0B)
    public static let numericComparisonFailed = Self(rawValue: 0x0C)
    public static let keyRejected = Self(rawValue: 0x0F)
    public static let busy = Self(rawValue: 0x10)

    public var description: String {
        let names: [UInt8: String] = [
            0x01: "Passkey Entry Failed", 0x02: "OOB Not Available", 0x03: "Authentication Requirements",
            0x04: "Confirm Value Failed", 0x05: "Pairing Not Supported", 0x06: "Encryption Key Size",
            0x07: "Command Not Supported", 0x08: "Unspecified Reason", 0x09: "Repeated Attempts",
            0x0A: "Invalid Parameters", 0x0B: "DHKey Check Failed", 0x0C: "Numeric Comparison Failed",
            0x0D: "BR/EDR pairing in progress", 0x0E: "Cross-transport Key Derivation/Generation not allowed",
            0x0F: "Key Rejected", 0x10: "Busy"
        ]
        let code = "0x" + (rawValue < 0x10 ? "0" : "") + String(rawValue, radix: 16, uppercase: true)
        return "\(names[rawValue] ?? "Reserved") (\(code))"
    }
}

/// The SMP command codes (Vol 3 Part H 3.3, Table 3.3).
public enum SMPCode: UInt8, Sendable {
    case pairingRequest = 0x01
    case pairingResponse = 0x02
    case pairingConfirm = 0x03
    case pairingRandom = 0x04
    case pairingFailed = 0x05
    case encryptionInformation = 0x06
    case centralIdentification = 0x07
    case identityInformation = 0x08
    case identityAddressInformation = 0x09
    case signingInformation = 0x0A
    case securityRequest = 0x0B
    case pairingPublicKey = 0x0C
    case pairingDHKeyCheck = 0x0D
    case keypressNotification = 0x0E

    /// The fixed length of each command's parameters: every SMP PDU has exactly one valid length.
    var parameterLength: Int {
        switch self {
        case .pairingRequest, .pairingResponse: 6
        case .pairingConfirm, .pairingRandom, .encryptionInformation, .identityInformation,
            .signingInformation, .pairingDHKeyCheck:
            16
        case .pairingFailed, .securityRequest, .keypressNotification: 1
        case .centralIdentification: 10
        case .identityAddressInformation: 7
        case .pairingPublicKey: 64
        }
    }
}

/// One Security Manager Protocol PDU on L2CAP CID 0x0006.
///
/// Values (confirm, random, keys, public key coordinates, DHKey check) are held exactly as they
/// travel: little-endian. The pairing logic reverses them where the toolbox wants the
/// specification's most-significant-first notation. `description` never shows key material.
public enum SMPPDU: Hashable, Sendable, CustomStringConvertible {
    case pairingRequest(PairingFeatures)
    case pairingResponse(PairingFeatures)
    case pairingConfirm([UInt8])
    case pairingRandom([UInt8])
    case pairingFailed(PairingFailureReason)
    case encryptionInformation(longTermKey: [UInt8])
    case centralIdentification(ediv: UInt16, rand: UInt64)
    case identityInformation(identityResolvingKey: [UInt8])
    case identityAddressInformation(BluetoothAddress)
    case signingInformation(signatureKey: [UInt8])
    case securityRequest(AuthenticationRequirements)
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    case pairingDHKeyCheck([UInt8])
    case keypressNotification(KeypressNotification)

    public enum KeypressNotification: UInt8, Hashable, Sendable {
        case entryStarted = 0
        case digitEntered = 1
        case digitErased = 2
        case cleared = 3
        case entryCompleted = 4
    }

    /// Why a received PDU could not be decoded, and what the spec says to do about it.
    public enum DecodeError: Swift.Error, Hashable, Sendable {
        case empty
        /// A code reserved for future use: Vol 3 Part H 3.3 says such a packet shall be ignored.
        case reservedCode(UInt8)
        case wrongLength(SMPCode, expected: Int, actual: Int)
        case invalidParameter(SMPCode, String)

        /// The Pairing Failed reason to answer with; nil when the packet is silently dropped.
        public var failureReason: PairingFailureReason? {
            switch self {
            case .empty, .reservedCode: nil
            case .wrongLength, .invalidParameter: .invalidParameters
            }
        }
    }

    public var code: SMPCode {
        switch self {
        case .pairingRequest: .pairingRequest
        case .pairingResponse: .pairingResponse
        case .pairingConfirm: .pairingConfirm
        case .pairingRandom: .pairingRandom
        case .pairingFailed: .pairingFailed
        case .encryptionInformation: .encryptionInformation
        case .centralIdentification: .centralIdentification
        case .identityInformation: .identityInformation
        case .identityAddressInformation: .identityAddressInformation
        case .signingInformation: .signingInformation
        case .securityRequest: .securityRequest
        case .pairingPublicKey: .pairingPublicKey
        case .pairingDHKeyCheck: .pairingDHKeyCheck
        case .keypressNotification: .keypressNotification
        }
    }

    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        guard let first = bytes.first else { throw .empty }
        guard let code = SMPCode(rawValue: first) else { throw .reservedCode(first) }
        guard bytes.count - 1 == code.parameterLength else {
            throw .wrongLength(code, expected: code.parameterLength, actual: bytes.count - 1)
        }
        let body = Array(bytes[1...])
        switch code {
        case .pairingRequest: self = .pairingRequest(try Self.features(body, code))
        case .pairingResponse: self = .pairingResponse(try Self.features(body, code))
        case .pairingConfirm: self = .pairingConfirm(body)
        case .pairingRandom: self = .pairingRandom(body)
        case .pairingFailed: self = .pairingFailed(PairingFailureReason(rawValue: body[0]))
        case .encryptionInformation: self = .encryptionInformation(longTermKey: body)
        case .centralIdentification:
            let ediv = UInt16(body[0]) | UInt16(body[1]) << 8
            let rand = body[2...].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            self = .centralIdentification(ediv: ediv, rand: rand)
        case .identityInformation: self = .identityInformation(identityResolvingKey: body)
        case .identityAddressInformation:
            guard let kind = BluetoothAddress.Kind(rawValue: body[0]) else {
                throw .invalidParameter(code, "address type \(body[0])")
            }
            self = .identityAddressInformation(BluetoothAddress(littleEndianBytes: Array(body[1...]), kind: kind))
        case .signingInformation: self = .signingInformation(signatureKey: body)
        case .securityRequest: self = .securityRequest(AuthenticationRequirements(rawValue: body[0]))
        case .pairingPublicKey: self = .pairingPublicKey(x: Array(body[..<32]), y: Array(body[32...]))
        case .pairingDHKeyCheck: self = .pairingDHKeyCheck(body)
        case .keypressNotification:
            guard let kind = KeypressNotification(rawValue: body[0]) else {
                throw .invalidParameter(code, "notification type \(body[0])")
            }
            self = .keypressNotification(kind)
        }
    }

    private static func features(_ body: [UInt8], _ code: SMPCode) throws(DecodeError) -> PairingFeatures {
        guard let io = IOCapability(rawValue: body[0]) else {
            throw .invalidParameter(code, "IO capability \(body[0])")
        }
        guard body[1] <= 1 else { throw .invalidParameter(code, "OOB data flag \(body[1])") }
        guard (7...16).contains(body[3]) else {
            throw .invalidParameter(code, "maximum encryption key size \(body[3])")
        }
        return PairingFeatures(
            ioCapability: io, oobDataPresent: body[1] == 1,
            authentication: AuthenticationRequirements(rawValue: body[2]), maximumKeySize: body[3],
            initiatorKeys: KeyDistribution(rawValue: body[4]), responderKeys: KeyDistribution(rawValue: body[5]))
    }

    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: 65)
        writer.write(code.rawValue)
        switch self {
        case .pairingRequest(let features), .pairingResponse(let features):
            writer.write(features.ioCapability.rawValue)
            writer.write(UInt8(features.oobDataPresent ? 1 : 0))
            writer.write(features.authentication.rawValue)
            writer.write(features.maximumKeySize)
            writer.write(features.initiatorKeys.rawValue)
            writer.write(features.responderKeys.rawValue)
        case .pairingConfirm(let value), .pairingRandom(let value), .encryptionInformation(let value),
            .identityInformation(let value), .signingInformation(let value), .pairingDHKeyCheck(let value):
            writer.write(contentsOf: value)
        case .pairingFailed(let reason): writer.write(reason.rawValue)
        case .centralIdentification(let ediv, let rand):
            writer.write(ediv)
            writer.write(rand)
        case .identityAddressInformation(let address):
            writer.write(address.kind.rawValue)
            writer.write(contentsOf: address.bytes)
        case .securityRequest(let requirements): writer.write(requirements.rawValue)
        case .pairingPublicKey(let x, let y):
            writer.write(contentsOf: x)
            writer.write(contentsOf: y)
        case .keypressNotification(let kind): writer.write(kind.rawValue)
        }
        return writer.bytes
    }

    public var description: String {
        switch self {
        case .pairingRequest(let f): "Pairing Request(\(Self.describe(f)))"
        case .pairingResponse(let f): "Pairing Response(\(Self.describe(f)))"
        case .pairingConfirm: "Pairing Confirm"
        case .pairingRandom: "Pairing Random"
        case .pairingFailed(let reason): "Pairing Failed(\(reason))"
        case .encryptionInformation: "Encryption Information(LTK <redacted>)"
        case .centralIdentification: "Central Identification(EDIV/Rand <redacted>)"
        case .identityInformation: "Identity Information(IRK <redacted>)"
        case .identityAddressInformation(let address): "Identity Address Information(\(address), \(address.kind))"
        case .signingInformation: "Signing Information(CSRK <redacted>)"
        case .securityRequest(let auth): "Security Request(AuthReq 0x\(String(auth.rawValue, radix: 16)))"
        case .pairingPublicKey: "Pairing Public Key"
        case .pairingDHKeyCheck: "Pairing DHKey Check"
        case .keypressNotification(let kind): "Keypress Notification(\(kind))"
        }
    }

    private static func describe(_ f: PairingFeatures) -> String {
        "io=\(f.ioCapability) oob=\(f.oobDataPresent) authReq=0x\(String(f.authentication.rawValue, radix: 16)) "
            + "maxKeySize=\(f.maximumKeySize) initKeys=0x\(String(f.initiatorKeys.rawValue, radix: 16)) "
            + "respKeys=0x\(String(f.responderKeys.rawValue, radix: 16))"
    }
}
