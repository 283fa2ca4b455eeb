/// How the gateway pairs, from the `security` part of the configuration.
public struct SecurityConfiguration: Sendable, Hashable {
    /// What the gateway can show or take: `displayOnly` (the passkey goes to the log and MQTT),
    /// `displayYesNo` (also allows Numeric Comparison, confirmed through the API),
    /// `keyboardOnly`/`keyboardDisplay` (a passkey typed into the API), or `noInputNoOutput`
    /// (Just Works only: no protection against a man in the middle).
    public var ioCapability: IOCapability
    /// A fixed passkey (0...999999) shown instead of a random one. Weaker: anyone who learns it
    /// can pair; useful for a headless gateway whose log nobody watches.
    public var fixedPasskey: UInt32?
    /// Accept LE legacy pairing (c1/s1) from centrals without Secure Connections. Off by default:
    /// legacy Just Works and Passkey keys can be cracked from a recorded pairing.
    public var allowLegacy: Bool
    /// Whether the gateway bonds (stores keys) when the central asks to.
    public var bondable: Bool
    /// Exchange CSRKs (signed writes). Off by default: gattway has no signed-write handling.
    public var signingKeys: Bool
    /// The smallest encryption key size accepted (7...16).
    public var minimumKeySize: UInt8
    /// The IRK the gateway distributes; nil generates a fresh one per bond (kept in the bond).
    public var localIdentityResolvingKey: SecretKey?
    /// Repeated-attempts back-off (Vol 3 Part H 2.3.6): the wait after the first failed attempt,
    /// doubled on each further failure, capped at `backoffMaximum`.
    public var backoffBase: Duration
    public var backoffMaximum: Duration
    /// Whether new centrals pair at any time (`.open`) or only inside a pairing window the owner
    /// opens (`.window`, see `PairingWindow`). `.open` here, for the host used on its own; the
    /// gateway's configuration (`bluetooth.security.pairing`) defaults to `.window`.
    public var pairing: PairingWindow.Policy

    public enum Error: Swift.Error, Hashable, CustomStringConvertible {
        case passkeyOutOfRange(UInt32)
        case keySizeOutOfRange(UInt8)
        case backoffOutOfRange

        public var description: String {
            switch self {
            case .passkeyOutOfRange(let value): "fixed passkey \(value) is not 000000...999999"
            case .keySizeOutOfRange(let value): "minimum key size \(value) is not 7...16"
            case .backoffOutOfRange: "the back-off base must be positive and at most the maximum"
            }
        }
    }

    /// The defaults: display-only, random passkeys, Secure Connections only, bondable.
    public static let standard = try! SecurityConfiguration()

    public init(
        ioCapability: IOCapability = .displayOnly, fixedPasskey: UInt32? = nil,
        allowLegacy: Bool = false, bondable: Bool = true, signingKeys: Bool = false,
        minimumKeySize: UInt8 = 16, localIdentityResolvingKey: SecretKey? = nil,
        backoffBase: Duration = .seconds(2), backoffMaximum: Duration = .seconds(300),
        pairing: PairingWindow.Policy = .open
    ) throws(Error) {
        if let fixedPasskey, fixedPasskey > 999_999 { throw .passkeyOutOfRange(fixedPasskey) }
        guard (7...16).contains(minimumKeySize) else { throw .keySizeOutOfRange(minimumKeySize) }
        guard backoffBase > .zero, backoffMaximum >= backoffBase else { throw .backoffOutOfRange }
        self.ioCapability = ioCapability
        self.fixedPasskey = fixedPasskey
        self.allowLegacy = allowLegacy
        self.bondable = bondable
        self.signingKeys = signingKeys
        self.minimumKeySize = minimumKeySize
        self.localIdentityResolvingKey = localIdentityResolvingKey
        self.backoffBase = backoffBase
        self.backoffMaximum = backoffMaximum
        self.pairing = pairing
    }
}
