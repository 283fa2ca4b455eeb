import BluetoothCore
import LoopClock

/// The gateway's Security Manager in the peripheral (responder) role: pairing, key
/// distribution, bonds and the keys that encrypt links. Pure and deterministic: no sockets, no
/// clocks (time is a moment on the loop's clock, `LoopInstant`, passed in), randomness injected.
///
/// ## The seam the host calls
/// The host owns one `SecurityManager` (inside its actor) and for every LE connection:
/// - `connectionOpened(_:peer:local:)` on LE Connection Complete, with the central's address as
///   seen on air and our address (public or static random: it is also the identity address we
///   distribute); `connectionClosed(_:)` on Disconnection Complete.
/// - `receive(_:on:now:)` with each SDU of L2CAP CID 0x0006. It returns `Action`s:
///   `.send(handle, pdu)` — write `pdu.encoded` to CID 0x0006 of that connection, in order;
///   `.event(...)` — `displayPasskey` (log the 6 digits and publish them on MQTT),
///   `passkeyRequested` (answer with `enterPasskey`), `numericComparison` (show the value,
///   answer with `confirmNumericComparison`), `pairingComplete` (persist `bonds` with `BondStore`
///   when the outcome carries a bond), `pairingFailed`.
/// - `longTermKeyRequest(on:ediv:rand:)` on HCI LE Long Term Key Request: reply with
///   `key.littleEndianBytes`, or send the Negative Reply when it returns nil.
/// - `encryptionChanged(on:enabled:now:)` on HCI Encryption Change (and Key Refresh Complete
///   with `enabled: true`): this starts key distribution of a pairing in progress;
///   `linkEncryption(on:)` then says what the link is protected by (for ATT permission checks).
/// - `requestSecurity(on:authenticated:now:)` when a GATT access needs more security than the
///   link has: sends a Security Request so the central pairs or encrypts.
/// - `nextDeadline` / `expireTimers(now:)`: the 30 s SMP timeout (Vol 3 Part H 3.4). Schedule a
///   timer for `nextDeadline`; on expiry the pairing fails and SMP stays silent on that link
///   until it reconnects (no Pairing Failed is sent, as the spec requires).
/// - `openPairingWindow(for:now:)` / `closePairingWindow()`: with `SecurityConfiguration.pairing`
///   `.window`, a Pairing Request outside the window gets Pairing Failed (Pairing Not Supported)
///   and a `pairingRefused` event; `nextDeadline` includes the window's end, and `expireTimers`
///   closes it (`pairingWindowClosed`). Encrypting with a bond's key needs no window.
/// - `bonds`, `removeBond(_:)`, `removeAllBonds()`, `setClientConfiguration(_:handle:on:)` for
///   the bond store, `gattway bonds`, and restoring subscriptions (`bond(on:)`).
public struct SecurityManager: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public typealias ConnectionHandle = UInt16

    public enum Action: Hashable, Sendable {
        case send(ConnectionHandle, SMPPDU)
        case event(SecurityEvent)
    }

    /// The SMP timeout: 30 s after the last SMP PDU of a pairing was queued or received.
    public static let timeout: Duration = .seconds(30)

    public let configuration: SecurityConfiguration
    public private(set) var bonds: BondRegistry
    /// When new centrals may pair.
    public private(set) var pairingWindow: PairingWindow
    /// Pairing Requests refused because no pairing window was open, since the manager started.
    public private(set) var refusedPairings = 0
    private var backoff: PairingBackoff
    private var random: any PairingRandomSource
    private var links: [ConnectionHandle: Link] = [:]

    private struct Link: Sendable {
        let peer: BluetoothAddress
        let local: BluetoothAddress
        var session: PairingSession?
        var deadline: LoopInstant?
        /// After an SMP timeout no further SMP traffic is allowed on the link (Vol 3 Part H 3.4).
        var timedOut = false
        /// The key handed to the controller in the last LTK reply, in effect once encryption is on.
        var pendingKey: LongTermKey?
        var pendingKeyBonded = false
        var security: LinkEncryption?
        /// The identity of the bond this link paired into or encrypted with: a central may
        /// distribute an identity address other than the address it connected from.
        var bondIdentity: BluetoothAddress?
    }

    public init(
        configuration: SecurityConfiguration, bonds: BondRegistry = BondRegistry(),
        random: any PairingRandomSource = SystemRandomSource()
    ) {
        self.configuration = configuration
        self.bonds = bonds
        self.random = random
        pairingWindow = PairingWindow(policy: configuration.pairing)
        backoff = PairingBackoff(base: configuration.backoffBase, maximum: configuration.backoffMaximum)
    }

    /// Never the session state: it holds private keys, nonces and the DHKey.
    public var description: String {
        "SecurityManager(\(links.count) connections, \(links.values.filter { $0.session != nil }.count) pairing, "
            + "\(bonds.bonds.count) bonds)"
    }

    public var debugDescription: String { description }

    // MARK: Connections

    public mutating func connectionOpened(_ handle: ConnectionHandle, peer: BluetoothAddress, local: BluetoothAddress) {
        links[handle] = Link(peer: peer, local: local)
    }

    public mutating func connectionClosed(_ handle: ConnectionHandle) {
        links[handle] = nil
    }

    /// What the encrypted link `handle` is protected by; nil while it is not encrypted.
    public func linkEncryption(on handle: ConnectionHandle) -> LinkEncryption? { links[handle]?.security }

    /// The bond of the central on `handle` (its identity or resolved private address), if any.
    /// Restore its subscriptions only once `linkEncryption(on:)?.bonded` is true: an address alone
    /// can be spoofed, the bonded key cannot.
    public func bond(on handle: ConnectionHandle) -> Bond? {
        guard let link = links[handle] else { return nil }
        return link.bondIdentity.flatMap { bonds.bond(for: $0) } ?? bonds.bond(for: link.peer)
    }

    /// Whether a pairing is under way on `handle`.
    public func isPairing(on handle: ConnectionHandle) -> Bool { links[handle]?.session != nil }

    // MARK: SMP PDUs

    public mutating func receive(_ bytes: [UInt8], on handle: ConnectionHandle, now: LoopInstant) -> [Action] {
        guard let link = links[handle], !link.timedOut else { return [] }
        let pdu: SMPPDU
        do {
            pdu = try SMPPDU(decoding: bytes)
        } catch {
            guard let reason = error.failureReason else { return [] }
            return fail(handle, reason, now: now)
        }
        if link.session != nil { links[handle]?.deadline = now + Self.timeout }
        switch pdu {
        case .pairingRequest(let request):
            return startPairing(handle, request: request, now: now)
        case .pairingFailed(let reason):
            guard link.session != nil else { return [] }
            end(handle)
            return [.event(.pairingFailed(handle, peer: link.peer, .received(reason)))]
        case .keypressNotification:
            return []  // Progress of the user's typing; nothing to do.
        case .pairingResponse, .securityRequest:
            return fail(handle, .commandNotSupported, now: now)  // Initiator-bound commands.
        default:
            guard var session = link.session else { return fail(handle, .unspecifiedReason, now: now) }
            do {
                let (sends, prompts) = try session.handle(pdu, random: &random)
                links[handle]?.session = session
                return output(handle, sends, prompts, now: now) + completeIfDone(handle, now: now)
            } catch {
                return fail(handle, error, now: now)
            }
        }
    }

    private mutating func startPairing(_ handle: ConnectionHandle, request: PairingFeatures, now: LoopInstant) -> [Action] {
        guard let link = links[handle] else { return [] }
        guard link.session == nil else { return fail(handle, .unspecifiedReason, now: now) }
        // Pairing Not Supported (Vol 3 Part H 3.5.5): pairing is not possible now. Not Repeated
        // Attempts, which means "wait and retry", nor a back-off entry: the owner must act.
        guard pairingWindow.isOpen(at: now) else {
            refusedPairings += 1
            return [
                .send(handle, .pairingFailed(.pairingNotSupported)),
                .event(.pairingRefused(handle, peer: link.peer))
            ]
        }
        guard !backoff.isBlocked(backoffKey(link), now: now) else {
            return fail(handle, .repeatedAttempts, now: now)
        }
        do {
            let (session, sends, prompts) = try PairingSession.start(
                request: request, peer: link.peer, local: link.local, configuration: configuration, random: &random)
            links[handle]?.session = session
            return output(handle, sends, prompts, now: now)
        } catch {
            return fail(handle, error, now: now)
        }
    }

    // MARK: User answers

    public mutating func confirmNumericComparison(on handle: ConnectionHandle, accepted: Bool, now: LoopInstant) -> [Action] {
        guard var session = links[handle]?.session else { return [] }
        do {
            let sends = try session.confirmNumericComparison(accepted)
            links[handle]?.session = session
            return output(handle, sends, [], now: now)
        } catch {
            return fail(handle, error, now: now)
        }
    }

    /// The passkey the user typed for `passkeyRequested`; nil cancels (Passkey Entry Failed).
    public mutating func enterPasskey(_ passkey: UInt32?, on handle: ConnectionHandle, now: LoopInstant) -> [Action] {
        guard var session = links[handle]?.session else { return [] }
        do {
            let sends = try session.enterPasskey(passkey, random: &random)
            links[handle]?.session = session
            return output(handle, sends, [], now: now)
        } catch {
            return fail(handle, error, now: now)
        }
    }

    // MARK: Encryption

    /// The key for HCI LE Long Term Key Request: the key of the pairing under way (EDIV = 0,
    /// Rand = 0), else the bonded key whose EDIV/Rand match; nil means Negative Reply.
    public mutating func longTermKeyRequest(on handle: ConnectionHandle, ediv: UInt16, rand: UInt64) -> LongTermKey? {
        guard let link = links[handle] else { return nil }
        if let session = link.session {
            guard session.phase == .awaitingEncryption, let key = session.encryptionKey,
                key.matches(ediv: ediv, rand: rand)
            else { return nil }
            links[handle]?.pendingKey = key
            links[handle]?.pendingKeyBonded = false
            return key
        }
        guard let bond = bonds.bond(for: link.peer), bond.longTermKey.matches(ediv: ediv, rand: rand) else {
            return nil
        }
        links[handle]?.pendingKey = bond.longTermKey
        links[handle]?.pendingKeyBonded = true
        links[handle]?.bondIdentity = bond.identity
        return bond.longTermKey
    }

    /// HCI Encryption Change: the link now runs on the key of the last LTK reply (or not at all).
    public mutating func encryptionChanged(on handle: ConnectionHandle, enabled: Bool, now: LoopInstant) -> [Action] {
        guard let link = links[handle] else { return [] }
        guard enabled, let key = link.pendingKey else {
            links[handle]?.security = nil
            return []
        }
        links[handle]?.security = LinkEncryption(
            keySize: key.keySize, authenticated: key.authenticated,
            secureConnections: key.secureConnections, bonded: link.pendingKeyBonded)
        guard var session = link.session, session.phase == .awaitingEncryption else { return [] }
        let sends = session.linkEncrypted(localIdentity: link.local, random: &random)
        links[handle]?.session = session
        return output(handle, sends, [], now: now) + completeIfDone(handle, now: now)
    }

    /// Asks the central to pair or encrypt (Security Request, Vol 3 Part H 3.6.7) because a GATT
    /// access needs more than the link has. Nothing is sent while pairing, after an SMP timeout,
    /// during the repeated-attempts wait, when the link already has what is asked, or to a central
    /// without a bond while no pairing window is open (its pairing would be refused).
    public mutating func requestSecurity(on handle: ConnectionHandle, authenticated: Bool, now: LoopInstant) -> [Action] {
        guard let link = links[handle], !link.timedOut, link.session == nil,
            !backoff.isBlocked(backoffKey(link), now: now)
        else { return [] }
        if let security = link.security, security.authenticated || !authenticated { return [] }
        guard pairingWindow.isOpen(at: now) || bond(on: handle) != nil else { return [] }
        var requirements: AuthenticationRequirements = [.secureConnections]
        if configuration.bondable { requirements.insert(.bonding) }
        if authenticated { requirements.insert(.mitm) }
        return [.send(handle, .securityRequest(requirements))]
    }

    // MARK: Timeout

    /// The earliest SMP timeout pending or the pairing window's end, for the host's timer.
    public var nextDeadline: LoopInstant? {
        (links.values.compactMap(\.deadline) + [pairingWindow.deadline].compactMap { $0 }).min()
    }

    public mutating func expireTimers(now: LoopInstant) -> [Action] {
        var actions: [Action] = []
        if pairingWindow.expire(at: now) { actions.append(.event(.pairingWindowClosed)) }
        for handle in links.keys.sorted() {
            guard let link = links[handle], let deadline = link.deadline, deadline <= now else { continue }
            end(handle)
            links[handle]?.timedOut = true
            actions.append(.event(.pairingFailed(handle, peer: link.peer, .timedOut)))
        }
        return actions
    }

    // MARK: The pairing window

    /// Opens the pairing window for `length` from `now` (with `SecurityConfiguration.pairing`
    /// `.open`, pairing is always allowed and this changes nothing).
    public mutating func openPairingWindow(for length: Duration, now: LoopInstant) {
        pairingWindow.open(for: length, at: now)
    }

    /// Closes the pairing window at once; true when it was open. A pairing already under way
    /// goes on to its end.
    @discardableResult
    public mutating func closePairingWindow() -> Bool { pairingWindow.close() }

    // MARK: Bonds

    public mutating func removeBond(_ address: BluetoothAddress) -> Bool { bonds.remove(address) }

    public mutating func removeAllBonds() { bonds.removeAll() }

    /// Records a CCCD write on `handle` if the link is encrypted with a bonded key (a spoofed
    /// address must not rewrite a bond); true when the bonds changed (the host then persists them).
    /// Records the Database Hash the central on `handle` now knows, on a link encrypted with its
    /// bond's key; true when the bond changed (then persist `bonds`).
    public mutating func setDatabaseHash(_ hash: [UInt8], on handle: ConnectionHandle) -> Bool {
        guard let link = links[handle], link.security?.bonded == true, let bond = bond(on: handle) else { return false }
        let before = bonds
        bonds.setDatabaseHash(hash, for: bond.identity)
        return bonds != before
    }

    /// Records the Client Supported Features the central on `handle` wrote, on a link encrypted
    /// with its bond's key; true when the bond changed (then persist `bonds`).
    public mutating func setClientSupportedFeatures(_ features: UInt8, on handle: ConnectionHandle) -> Bool {
        guard let link = links[handle], link.security?.bonded == true, let bond = bond(on: handle) else { return false }
        let before = bonds
        bonds.setClientSupportedFeatures(features, for: bond.identity)
        return bonds != before
    }

    public mutating func setClientConfiguration(_ value: UInt16, handle attribute: UInt16, on handle: ConnectionHandle) -> Bool {
        guard let link = links[handle], link.security?.bonded == true, let bond = bond(on: handle) else { return false }
        let before = bonds
        bonds.setClientConfiguration(value, handle: attribute, for: bond.identity)
        return bonds != before
    }

    // MARK: Plumbing

    /// The name the back-off knows a peer by: its bond identity when bonded, else its address.
    private func backoffKey(_ link: Link) -> BluetoothAddress {
        bonds.bond(for: link.peer)?.identity ?? link.peer
    }

    private mutating func output(
        _ handle: ConnectionHandle, _ sends: [SMPPDU], _ prompts: [PairingPrompt],
        now: LoopInstant
    ) -> [Action] {
        guard let link = links[handle] else { return [] }
        if !sends.isEmpty, link.session != nil { links[handle]?.deadline = now + Self.timeout }
        return sends.map { .send(handle, $0) }
            + prompts.map { prompt in
                switch prompt {
                case .displayPasskey(let value): .event(.displayPasskey(handle, peer: link.peer, passkey: value))
                case .requestPasskey: .event(.passkeyRequested(handle, peer: link.peer))
                case .numericComparison(let value): .event(.numericComparison(handle, peer: link.peer, value: value))
                }
            }
    }

    private mutating func completeIfDone(_ handle: ConnectionHandle, now: LoopInstant) -> [Action] {
        guard let link = links[handle], let keys = link.session?.result else { return [] }
        end(handle)
        let identity = keys.peerIdentity ?? link.peer
        var bond: Bond?
        if keys.bonding, let ltk = keys.longTermKey {
            let previous = bonds.bond(for: identity) ?? bonds.bond(for: link.peer)
            let stored = Bond(
                identity: identity, longTermKey: ltk, peerIdentityResolvingKey: keys.peerIdentityResolvingKey,
                localIdentityResolvingKey: keys.localIdentityResolvingKey, peerSigningKey: keys.peerSigningKey,
                localSigningKey: keys.localSigningKey,
                clientConfigurations: previous?.identity == identity ? previous?.clientConfigurations ?? [:] : [:])
            if let previous { bonds.remove(previous.identity) }
            bonds.insert(stored)
            bond = stored
            links[handle]?.bondIdentity = identity
        }
        backoff.recordSuccess(link.peer)
        backoff.recordSuccess(identity)
        let security = LinkEncryption(
            keySize: keys.encryption.keySize, authenticated: keys.encryption.authenticated,
            secureConnections: keys.encryption.secureConnections, bonded: bond != nil)
        links[handle]?.security = security
        return [
            .event(
                .pairingComplete(
                    handle,
                    PairingOutcome(
                        peer: link.peer, identity: identity, security: security, bond: bond)))
        ]
    }

    private mutating func end(_ handle: ConnectionHandle) {
        links[handle]?.session = nil
        links[handle]?.deadline = nil
    }

    /// Sends Pairing Failed, ends the pairing, and starts or lengthens the repeated-attempts wait
    /// when the failure was an authentication failure a guessing attacker would cause.
    private mutating func fail(_ handle: ConnectionHandle, _ reason: PairingFailureReason, now: LoopInstant) -> [Action] {
        guard let link = links[handle] else { return [] }
        end(handle)
        let guessing: Set<PairingFailureReason> = [
            .passkeyEntryFailed, .confirmValueFailed, .dhKeyCheckFailed, .numericComparisonFailed
        ]
        if guessing.contains(reason) { backoff.recordFailure(backoffKey(link), now: now) }
        return [
            .send(handle, .pairingFailed(reason)),
            .event(.pairingFailed(handle, peer: link.peer, .sent(reason)))
        ]
    }
}

/// What the host reports to the user or acts on.
public enum SecurityEvent: Hashable, Sendable, CustomStringConvertible {
    /// Show this passkey (log line and MQTT); the user types it on the central.
    case displayPasskey(SecurityManager.ConnectionHandle, peer: BluetoothAddress, passkey: UInt32)
    /// The user must type the passkey shown on the central: call `enterPasskey`.
    case passkeyRequested(SecurityManager.ConnectionHandle, peer: BluetoothAddress)
    /// Show this value; the user confirms it matches the central's: `confirmNumericComparison`.
    case numericComparison(SecurityManager.ConnectionHandle, peer: BluetoothAddress, value: UInt32)
    case pairingComplete(SecurityManager.ConnectionHandle, PairingOutcome)
    case pairingFailed(SecurityManager.ConnectionHandle, peer: BluetoothAddress, PairingFailure)
    /// A Pairing Request came while no pairing window was open: refused (Pairing Not Supported).
    case pairingRefused(SecurityManager.ConnectionHandle, peer: BluetoothAddress)
    /// The pairing window's time is up.
    case pairingWindowClosed

    public var description: String {
        switch self {
        case .displayPasskey(_, let peer, let passkey):
            "pairing with \(peer): enter passkey \(Self.sixDigits(passkey)) on the device"
        case .passkeyRequested(_, let peer): "pairing with \(peer): enter the passkey shown on the device"
        case .numericComparison(_, let peer, let value):
            "pairing with \(peer): confirm that the device shows \(Self.sixDigits(value))"
        case .pairingComplete(_, let outcome): "paired with \(outcome)"
        case .pairingFailed(_, let peer, let failure): "pairing with \(peer) failed: \(failure)"
        case .pairingRefused(_, let peer):
            "pairing with \(peer) refused: no pairing window is open (gattway pair opens one)"
        case .pairingWindowClosed: "pairing window closed"
        }
    }

    /// Six digits with leading zeros, as both devices display them.
    public static func sixDigits(_ value: UInt32) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }
}

public enum PairingFailure: Hashable, Sendable, CustomStringConvertible {
    /// We sent Pairing Failed with this reason.
    case sent(PairingFailureReason)
    /// The central sent Pairing Failed with this reason.
    case received(PairingFailureReason)
    /// No SMP PDU for 30 s; SMP is closed on this link until it reconnects.
    case timedOut

    public var description: String {
        switch self {
        case .sent(let reason): "\(reason) (sent)"
        case .received(let reason): "\(reason) (from the central)"
        case .timedOut: "SMP timeout"
        }
    }
}

/// A finished pairing: who, how strong, and the bond stored (nil when either side did not bond).
public struct PairingOutcome: Hashable, Sendable, CustomStringConvertible {
    /// The address the central connected from.
    public var peer: BluetoothAddress
    /// Its identity address (the same as `peer` when it distributed none).
    public var identity: BluetoothAddress
    public var security: LinkEncryption
    public var bond: Bond?

    public var description: String {
        "\(identity)" + (identity == peer ? "" : " (via \(peer))")
            + " keySize \(security.keySize)"
            + (security.authenticated ? " authenticated" : " unauthenticated")
            + (security.secureConnections ? " LE Secure Connections" : " legacy")
            + (bond == nil ? " not bonded" : " bonded")
    }
}
