/// What a button press was. The raw values are the event codes a `press` reading carries (on a
/// characteristic, a uint8): the same numbers as BTHome's button object (0x3A), so one code means
/// one thing everywhere.
public enum PressEvent: UInt8, Sendable, Hashable, CaseIterable {
    case single = 0x01
    case double = 0x02
    case long = 0x04

    /// Home Assistant's name for it (an `event` entity's `event_type`).
    public var eventType: String {
        switch self {
        case .single: "single_press"
        case .double: "double_press"
        case .long: "long_press"
        }
    }
}

/// `press:` of a binary sensor: its presses are told apart by how long the button is held and
/// how soon it is pressed again.
public struct PressSettings: Sendable, Hashable {
    /// A second press this soon after the first one's release makes a double press; a single
    /// press is told only once this has passed. Zero: no double presses, and a single press is
    /// told at its release.
    public var doublePressWindow: Duration
    /// Held this long, a press is a long press, told at once (not at its release).
    public var longPressTime: Duration

    public static let defaultDoublePressWindow = Duration.milliseconds(300)
    public static let defaultLongPressTime = Duration.milliseconds(800)

    public init(
        doublePressWindow: Duration = defaultDoublePressWindow, longPressTime: Duration = defaultLongPressTime
    ) {
        self.doublePressWindow = doublePressWindow
        self.longPressTime = longPressTime
    }

    /// The events these settings can produce (no double press without a window).
    public var events: [PressEvent] {
        doublePressWindow > .zero ? [.single, .double, .long] : [.single, .long]
    }
}

/// Tells single, double and long presses from a button's (debounced) level changes. Pure: time
/// comes in with each change and with `tick`, which is due at `deadline`.
///
/// - A press held `longPressTime` is a long press, told then; its release ends it.
/// - A press released sooner is a single press, told `doublePressWindow` after the release
///   unless the button is pressed again within it: that second press is a double press, told at
///   once (its release ends it). A third press starts over, so three quick presses are a double
///   press then (a window later) a single one.
struct PressDetector {
    private enum State: Equatable {
        case idle
        /// The first press, down since `since`.
        case down(since: UInt64)
        /// The first press was released at `at`; a second one within the window is a double.
        case released(at: UInt64)
        /// A press already told (long, or the second of a double), until its release.
        case told
    }

    private let windowNs: UInt64
    private let longNs: UInt64
    private var state = State.idle

    init(_ settings: PressSettings) {
        windowNs = settings.doublePressWindow.nanoseconds
        longNs = settings.longPressTime.nanoseconds
    }

    /// When `tick` must be called: a held press becomes long, a released one single.
    var deadline: UInt64? {
        switch state {
        case .down(let since): since + longNs
        case .released(let at): at + windowNs
        case .idle, .told: nil
        }
    }

    /// The button's state when reading starts: held already, the press is not told.
    mutating func start(active: Bool) {
        state = active ? .told : .idle
    }

    /// The button became pressed (`active`) or released at `time`. Repeated levels (after lost
    /// events) change nothing.
    mutating func change(active: Bool, at time: UInt64) -> PressEvent? {
        switch (state, active) {
        case (.idle, true):
            state = .down(since: time)
        case (.down, false):
            guard windowNs > 0 else {
                state = .idle
                return .single
            }
            state = .released(at: time)
        case (.released, true):
            state = .told
            return .double
        case (.told, false):
            state = .idle
        default:
            break
        }
        return nil
    }

    /// Tells what the deadline decided, when it has passed at `time`.
    mutating func tick(at time: UInt64) -> PressEvent? {
        guard let due = deadline, due <= time else { return nil }
        switch state {
        case .down:
            state = .told
            return .long
        case .released:
            state = .idle
            return .single
        case .idle, .told:
            return nil
        }
    }
}
