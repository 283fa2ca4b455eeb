import FoundationEssentials

/// Durations as written in the configuration: a number and a unit, e.g. `500ms`, `2s`, `1.5m`.
public enum DurationText {
    static let units: [(suffix: String, nanoseconds: Double)] = [
        ("us", 1e3), ("ms", 1e6), ("s", 1e9), ("m", 60e9), ("h", 3600e9)
    ]

    /// Parses `500ms`, `2s`, `1m`, `1.5h`, `250us`; nil for anything else.
    public static func parse(_ text: String) -> Duration? {
        let start = text.firstIndex { $0 != " " } ?? text.endIndex
        let end = text.lastIndex { $0 != " " }.map { text.index(after: $0) } ?? start
        let trimmed = text[start..<end]
        // Longest suffix first, so "ms" is not read as "s".
        for (suffix, scale) in units.sorted(by: { $0.suffix.count > $1.suffix.count })
        where trimmed.hasSuffix(suffix) {
            let number = trimmed.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                let value = Double(number), value.isFinite
            else { return nil }
            let nanoseconds = (value * scale).rounded()
            // Beyond ~292 years a Duration's nanoseconds no longer fit 64 bits.
            guard nanoseconds < 9e18 else { return nil }
            return .nanoseconds(Int64(nanoseconds))
        }
        return nil
    }

    /// A short exact form: `500ms`, `7.5ms`, `2s`, `10.24s`, `1m`, `0s`.
    public static func format(_ duration: Duration) -> String {
        let nanoseconds =
            duration.components.seconds * 1_000_000_000
            + duration.components.attoseconds / 1_000_000_000
        if nanoseconds == 0 { return "0s" }
        for (suffix, unit) in [("h", Int64(3_600_000_000_000)), ("m", 60_000_000_000), ("s", 1_000_000_000)]
        where nanoseconds % unit == 0 {
            return "\(nanoseconds / unit)\(suffix)"
        }
        if abs(nanoseconds) >= 1_000_000_000 { return decimal(nanoseconds, 1e9) + "s" }
        if abs(nanoseconds) >= 1_000_000 { return decimal(nanoseconds, 1e6) + "ms" }
        return decimal(nanoseconds, 1e3) + "us"
    }

    private static func decimal(_ nanoseconds: Int64, _ scale: Double) -> String {
        let value = Double(nanoseconds) / scale
        return value == value.rounded() ? String(Int64(value)) : String(value)
    }
}
