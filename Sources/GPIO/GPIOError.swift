/// Everything that can go wrong below the sensors, each case worded so the user knows what to do.
public enum GPIOError: Error, Equatable, CustomStringConvertible {
    /// No line with this name; `closest` are the most similar existing names.
    case lineNotFound(LineSelector, closest: [String])
    /// The selector's chip matches no chip (by label, name or path).
    case chipNotFound(String, available: [String])
    /// The line is held by another consumer (EBUSY).
    case lineBusy(ResolvedLine, consumer: String)
    /// Opening a chip or requesting a line was refused (EACCES/EPERM).
    case permissionDenied(path: String)
    /// Any other failure of a system call, with the errno text.
    case system(operation: String, target: String, errno: Int32, message: String)
    /// A line was used after `release()`.
    case released(String)

    public var description: String {
        switch self {
        case let .lineNotFound(selector, closest):
            let hint = closest.isEmpty ? "" : "; closest names: \(closest.joined(separator: ", "))"
            return "GPIO line \(selector) not found\(hint) (run `gattway lines` to list them)"
        case let .chipNotFound(chip, available):
            return "GPIO chip \(chip) not found; chips: \(available.joined(separator: ", "))"
        case let .lineBusy(line, consumer):
            let holder = consumer.isEmpty ? "another process" : "consumer \"\(consumer)\""
            return "GPIO line \(line) is busy: held by \(holder)"
        case let .permissionDenied(path):
            return "permission denied opening \(path): add the user to group `gpio` "
                + "(sudo usermod -aG gpio $USER, with the udev rules installed) and log in again"
        case let .system(operation, target, errno, message):
            return "\(operation) \(target) failed: \(message) (errno \(errno))"
        case let .released(line):
            return "GPIO line \(line) was already released"
        }
    }
}

/// Finds a line by name among chips, and otherwise explains what exists.
enum LineResolver {
    static func resolve(_ selector: LineSelector, in chips: [ChipInfo]) throws -> ResolvedLine {
        var candidates = chips
        if let chip = selector.chip {
            candidates = chips.filter { $0.matches(chip: chip) }
            if candidates.isEmpty {
                throw GPIOError.chipNotFound(chip, available: chips.map { "\($0.name) [\($0.label)]" })
            }
        }
        for chip in candidates {
            if let line = chip.lines.first(where: { $0.name == selector.name }) {
                return ResolvedLine(chip: chip, offset: line.offset, name: line.name)
            }
        }
        let names = candidates.flatMap { $0.lines.map(\.name) }.filter { !$0.isEmpty }
        throw GPIOError.lineNotFound(selector, closest: closestNames(to: selector.name, among: names))
    }

    /// Up to `limit` names nearest to `name` by case-insensitive edit distance, only those
    /// close enough to be a plausible typo (at most half the name's length apart).
    static func closestNames(to name: String, among names: [String], limit: Int = 3) -> [String] {
        let target = Array(name.lowercased())
        let cutoff = max(2, target.count / 2)
        let scored = Set(names).map { ($0, editDistance(target, Array($0.lowercased()))) }
            .filter { $0.1 <= cutoff }
            .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0 < $1.0 }
        return scored.prefix(limit).map(\.0)
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        var previous = Array(0...b.count)
        var current = previous
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
