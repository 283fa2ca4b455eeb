/// What sensors produce: small Sendable values streamed to the GATT and MQTT sides.
public struct SensorSample: Sendable, Equatable {
    public enum Reading: Sendable, Equatable {
        case number(Double)
        case bool(Bool)
        /// A reading that could not be taken; the reason is reported instead of a stale value.
        case failure(SensorFailure)
    }

    /// The sensor's configured name.
    public var sensor: String
    /// Which of the sensor's quantities this is: `value` for single-valued kinds, `temperature`
    /// and `humidity` for DHT, `high_time` and `duty_cycle` for pulse width, `press` (a
    /// `PressEvent` code, one value per press) for a binary sensor with press settings, and `lost_events`
    /// (running total) for any sensor whose edge events overflowed a buffer.
    public let channel: String
    /// What `channel` is: a reading, or one of the channels named below, which say something
    /// about the sensor rather than measure.
    public let role: ChannelRole
    public var reading: Reading

    /// The channel of a single-valued kind's readings.
    public static let valueChannel = "value"
    /// The channel carrying the running total of lost edge events.
    public static let lostEventsChannel = "lost_events"
    /// The channel of a binary sensor's presses: each value is one press's `PressEvent` code.
    public static let pressChannel = "press"
    /// The channel saying whether the sensor's readings are current (`SensorHealth`): a
    /// `.failure(.unavailable(why))` when it has given no good reading for its deadline, `.bool(true)`
    /// when a good reading brings it back. The sensor's other channels keep their last values.
    public static let availabilityChannel = "available"
    /// Monotonic time (ns) the reading refers to: the edge or the measurement that produced it.
    public var timestampNs: UInt64

    public init(sensor: String, channel: String, reading: Reading, timestampNs: UInt64) {
        self.init(sensor: sensor, channel: channel, role: ChannelRole(channel), reading: reading, timestampNs: timestampNs)
    }

    /// With the role its emission already knew, so a sample's channel is compared once.
    init(sensor: String, channel: String, role: ChannelRole, reading: Reading, timestampNs: UInt64) {
        self.sensor = sensor
        self.channel = channel
        self.role = role
        self.reading = reading
        self.timestampNs = timestampNs
    }

    /// The number, if this is a numeric reading.
    public var number: Double? {
        if case .number(let value) = reading { return value }
        return nil
    }

    /// The boolean, if this is a boolean reading.
    public var bool: Bool? {
        if case .bool(let value) = reading { return value }
        return nil
    }
}

/// Why a reading failed.
public enum SensorFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// No answer in time (HC-SR04 echo, DHT frame).
    case timeout
    /// A DHT frame whose checksum byte does not match the sum of its data bytes.
    case checksumMismatch(bytes: [UInt8])
    /// A DHT frame with fewer than 40 bits: edges were missed (on libgpiod v1 use the kernel's
    /// dht11 IIO overlay instead).
    case incompleteFrame(bits: Int)
    /// A GPIO error while reading or driving the sensor's lines.
    case gpio(String)
    /// State the sensor keeps across restarts (a counter's total) could not be saved; the
    /// sensor keeps it in memory, and the message says when it tries again.
    case notSaved(String)
    /// The sensor has given no good reading for its deadline (`SensorHealth`): why.
    case unavailable(String)

    public var description: String {
        switch self {
        case .timeout: "no answer from the sensor in time"
        case .checksumMismatch(let bytes):
            "checksum mismatch in frame \(bytes.map { String($0, radix: 16) }.joined(separator: " "))"
        case .incompleteFrame(let bits): "incomplete frame: \(bits) of 40 bits received"
        case .gpio(let message), .notSaved(let message), .unavailable(let message): message
        }
    }
}

/// What a sensor's channel carries.
public enum ChannelRole: Sendable, Equatable {
    /// A reading of the sensor: `value`, or a quantity of a kind with several.
    case reading
    /// `SensorSample.lostEventsChannel`.
    case lostEvents
    /// `SensorSample.pressChannel`.
    case press
    /// `SensorSample.availabilityChannel`.
    case availability

    /// Told once, where a channel's emission is made, and carried from there: the event path
    /// asks what a sample is several times per edge, and text that differs compares byte by byte
    /// (text that is the same compares by its bits, so `value`, the channel of nearly every
    /// reading, is tried first).
    public init(_ channel: String) {
        if channel == SensorSample.valueChannel {
            self = .reading
        } else if channel == SensorSample.availabilityChannel {
            self = .availability
        } else if channel == SensorSample.lostEventsChannel {
            self = .lostEvents
        } else if channel == SensorSample.pressChannel {
            self = .press
        } else {
            self = .reading
        }
    }
}
