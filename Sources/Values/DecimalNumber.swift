/// A finite number as `significand × 10^exponent`: the decimal a characteristic's bytes carry,
/// which is what gattway prints for a person (`ValueJSON.literal`). The significand has no
/// trailing zeros, so 2150 × 10^-2 and 215 × 10^-1 are the same number and print as 21.5.
struct DecimalNumber: Hashable, CustomStringConvertible {
    let significand: Int64
    let exponent: Int

    init(significand: Int64, exponent: Int) {
        var significand = significand
        var exponent = exponent
        while significand != 0, significand % 10 == 0 {
            significand /= 10
            exponent += 1
        }
        self.significand = significand
        self.exponent = significand == 0 ? 0 : exponent
    }

    /// The shortest decimal that reads back as exactly `value`, in `value`'s own type: 0.1 for
    /// the Float 0.1, where the Float widened to a Double would print 0.10000000149011612. Swift
    /// prints every Float and Double that way (at most 9 and 17 significant digits), so that
    /// text is taken apart here. nil for NaN and infinities.
    init?(shortest value: some BinaryFloatingPoint & CustomStringConvertible) {
        guard value.isFinite else { return nil }
        // "-12.5", "0.75", "1e-05", "3.4028235e+38": sign, digits with a point, exponent.
        let text = value.description
        let parts = text.split(separator: "e", maxSplits: 1)
        var significand: Int64 = 0
        var exponent = parts.count == 2 ? Int(parts[1]) ?? 0 : 0
        var afterPoint = false
        for character in parts[0] {
            if character == "." {
                afterPoint = true
            } else if let digit = character.wholeNumberValue {
                significand = significand * 10 + Int64(digit)
                if afterPoint { exponent -= 1 }
            }
        }
        self.init(significand: text.hasPrefix("-") ? -significand : significand, exponent: exponent)
    }

    /// As a JSON number, the way JavaScript prints numbers: plain notation from 1e-6 up to below
    /// 1e21 (`21.5`, `-0.05`, `250`, `0.000001`), exponent notation beyond (`1e-7`, `2.5e30`).
    /// Zero is `0`, whatever its sign.
    var description: String {
        guard significand != 0 else { return "0" }
        let sign = significand < 0 ? "-" : ""
        let digits = String(significand.magnitude)
        // The number is 0.<digits> × 10^point.
        let point = digits.count + exponent
        if exponent >= 0, point <= 21 {
            return sign + digits + String(repeating: "0", count: exponent)
        }
        if exponent < 0, point > 0 {
            let split = digits.index(digits.startIndex, offsetBy: point)
            return sign + digits[..<split] + "." + digits[split...]
        }
        if exponent < 0, point > -6 {
            return sign + "0." + String(repeating: "0", count: -point) + digits
        }
        let rest = digits.dropFirst()
        return sign + digits.prefix(1) + (rest.isEmpty ? "" : "." + rest) + "e\(point - 1)"
    }
}
