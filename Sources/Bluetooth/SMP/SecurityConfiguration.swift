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

    public init(ioCapability: IOCapability = .displayOnly, fixedPasskey: UInt32? = nil,
                allowLegacy: Bool = false, bondable: Bool = true, signingKeys: Bool = false,
                minimumKeySize: UInt8 = 16, localIdentityResolvingKey: SecretKey? = nil,
                backoffBase: Duration = .seconds(2), backoffMaximum: Duration = .seconds(300)) {
        precondition(fixedPasskey.map { $0 <= 999_999 } ?? true, "a passkey has six decimal digits")
        precondition((7...16).contains(minimumKeySize), "key sizes are 7...16 octets")
        self.ioCapability = ioCapability
        self.fixedPasskey = fixedPasskey
        self.allowLegacy = allowLegacy
        self.bondable = bondable
        self.signingKeys = signingKeys
        self.minimumKeySize = minimumKeySize
        self.localIdentityResolvingKey = localIdentityResolvingKey
        self.backoffBase = backoffBase
        self.backoffMaximum = backoffMaximum
    }
}
