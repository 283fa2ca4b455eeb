/// How a pairing authenticates, seen from the responder (the gateway).
/// Core Vol 3 Part H 2.3.5.1, Tables 2.7 and 2.8.
public enum AssociationModel: Hashable, Sendable {
    /// No protection against a man in the middle.
    case justWorks
    /// Both sides show a 6-digit value; the user confirms they match (Secure Connections only).
    case numericComparison
    /// The gateway shows a passkey; the user types it on the central.
    case passkeyDisplay
    /// The gateway is given the passkey (the central shows it, or both sides type one).
    case passkeyInput

    /// Whether the resulting keys are authenticated (MITM protected).
    public var isAuthenticated: Bool { self != .justWorks }

    /// Chooses the model. OOB is not offered by the gateway, so it never appears here.
    public static func select(
        initiator: IOCapability, responder: IOCapability,
        mitmRequested: Bool, secureConnections sc: Bool
    ) -> AssociationModel {
        guard mitmRequested else { return .justWorks }
        switch (initiator, responder) {
        case (.noInputNoOutput, _), (_, .noInputNoOutput): return .justWorks
        case (.displayOnly, .displayOnly), (.displayOnly, .displayYesNo),
            (.displayYesNo, .displayOnly):
            return .justWorks
        case (.displayOnly, .keyboardOnly), (.displayOnly, .keyboardDisplay),
            (.displayYesNo, .keyboardOnly), (.keyboardOnly, .keyboardOnly),
            (.keyboardDisplay, .keyboardOnly):
            return .passkeyInput
        case (.displayYesNo, .displayYesNo): return sc ? .numericComparison : .justWorks
        case (.displayYesNo, .keyboardDisplay), (.keyboardDisplay, .keyboardDisplay):
            return sc ? .numericComparison : .passkeyInput
        case (.keyboardOnly, .displayOnly), (.keyboardOnly, .displayYesNo),
            (.keyboardOnly, .keyboardDisplay), (.keyboardDisplay, .displayOnly):
            return .passkeyDisplay
        case (.keyboardDisplay, .displayYesNo): return sc ? .numericComparison : .passkeyDisplay
        }
    }
}
