import Values

/// When a characteristic's subscribers get a new value (configuration `notify:`), for each
/// subscribed central separately:
/// - `minInterval`: no two updates closer than this. A value arriving sooner is held; when the
///   interval expires the newest value is sent — never an older one — so the last value of a
///   burst always arrives.
/// - `maxInterval`: a heartbeat; when nothing was sent for this long the current value is sent
///   again, changed or not (never sooner than `minInterval`).
/// - `delta`: a numeric value is sent only when it differs from the last one sent by at least
///   this much (absolute, or percent of the last value sent); implies `onChange`.
/// - `onChange`: a value whose bytes equal the last one sent is not sent.
/// - `currentValueOnSubscribe`: a central that subscribes is judged at once on the current value,
///   as on a new one, instead of waiting for the next value or heartbeat. Nothing was sent to a new
///   subscription yet, so no interval holds it and `delta` and `onChange` let it through; only a
///   central's triggers can refuse it. It then counts as the last value sent.
public struct NotifyPolicy: Sendable, Hashable {
    public enum Delta: Sendable, Hashable {
        case absolute(Double)
        case percent(Double)
    }

    public var minInterval: Duration
    public var maxInterval: Duration?
    public var delta: Delta?
    public var onChange: Bool
    public var currentValueOnSubscribe: Bool

    /// Every value, as fast as it comes, from the first one after the subscription.
    public static let immediate = NotifyPolicy()

    public init(
        minInterval: Duration = .zero, maxInterval: Duration? = nil, delta: Delta? = nil,
        onChange: Bool = false, currentValueOnSubscribe: Bool = false
    ) {
        let floor = max(minInterval, .zero)
        self.minInterval = floor
        // A heartbeat of zero would be due forever; it means "no heartbeat".
        self.maxInterval = maxInterval.flatMap { $0 > .zero ? max($0, floor) : nil }
        self.delta = delta
        self.onChange = onChange
        self.currentValueOnSubscribe = currentValueOnSubscribe
    }

    /// Whether `new` is worth sending after `last` (nil: nothing sent yet).
    func admits(_ new: NotifySample, after last: NotifySample?) -> Bool {
        guard let last else { return true }
        if let delta, let value = new.value.numericValue, let previous = last.value.numericValue {
            let change = abs(value - previous)
            switch delta {
            case .absolute(let threshold):
                return change >= threshold
            case .percent(let percent):
                // From zero every change is infinitely many percent.
                return previous == 0 ? value != previous : change >= abs(previous) * percent / 100
            }
        }
        if delta != nil || onChange { return new.bytes != last.bytes }
        return true
    }
}

/// A value as the notify engine handles it: the bytes a central receives and the value they
/// encode (for deltas and trigger comparisons).
public struct NotifySample: Sendable, Hashable {
    public let value: SensorValue
    public let bytes: [UInt8]

    public init(value: SensorValue, bytes: [UInt8]) {
        self.value = value
        self.bytes = bytes
    }

    /// Encodes `value` with the characteristic's encoding.
    public init(_ value: SensorValue, encoding: ValueEncoding) throws(ValueError) {
        self.init(value: value, bytes: try encoding.encode(value))
    }
}

/// A central's own trigger conditions for one characteristic, written over the air as ES Trigger
/// Setting descriptors (up to three) combined by the ES Configuration descriptor's logic.
///
/// Each setting is a test at every opportunity (a new value, or a tick of a fixed interval):
/// fixed time interval holds only at its ticks; no-less-than holds when that long has passed
/// since the last transmission; value changed and the comparisons test the newest value. The
/// tests combine with AND or OR. A value refused only because a no-less-than interval has not
/// passed yet is held and tested again (newest value) when it has. Inactive settings take no
/// part; when all are inactive nothing is sent, heartbeats included. The characteristic's
/// configured `minInterval` stays a floor no trigger can undercut.
public struct TriggerSet: Sendable, Hashable {
    public var settings: [ESTriggerSetting]
    public var logic: TriggerLogic

    public init(_ settings: [ESTriggerSetting], logic: TriggerLogic = .and) {
        self.settings = settings
        self.logic = logic
    }

    var activeSettings: [ESTriggerSetting] { settings.filter { $0 != .inactive } }

    var fixedIntervals: [Duration] {
        activeSettings.compactMap {
            // A zero interval (refused on parse) would tick forever.
            if case .fixedTimeInterval(let seconds) = $0, seconds > 0 { .seconds(seconds) } else { nil }
        }
    }

    var minimumSpacings: [Duration] {
        activeSettings.compactMap {
            if case .noLessThanTimeInterval(let seconds) = $0 { .seconds(seconds) } else { nil }
        }
    }

    /// The combined test. `sinceLast` is the time since the last transmission (nil: none yet);
    /// `spacingWaived` treats every no-less-than interval as passed.
    func holds(
        _ sample: NotifySample, last: NotifySample?, atTick: Bool, sinceLast: Duration?,
        spacingWaived: Bool
    ) -> Bool {
        let results = activeSettings.map { setting -> Bool in
            switch setting {
            case .inactive: false
            case .fixedTimeInterval: atTick
            case .noLessThanTimeInterval(let seconds):
                spacingWaived || sinceLast.map { $0 >= .seconds(seconds) } ?? true
            case .valueChanged: last.map { $0.bytes != sample.bytes } ?? true
            case .compare(let comparison, let reference): comparison.holds(sample.value, reference: reference)
            }
        }
        guard !results.isEmpty else { return false }
        return logic == .and ? results.allSatisfy { $0 } : results.contains(true)
    }
}
