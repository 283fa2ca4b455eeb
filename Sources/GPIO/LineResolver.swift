/// Finds a line by name among chips, and otherwise explains what exists.
///
/// A name is first looked for as the kernel names lines, on every chip in turn; only then is a
/// Raspberry Pi GPIO name (`GPIO<n>`, `pin<k>`, see `RaspberryPiHeader`) taken as its line of
/// the SoC's pin controller. So a line really named `GPIO4`, on whichever chip, is never
/// shadowed by the alias, and on Raspberry Pi OS, whose names are the BCM ones, the alias is
/// never needed.
public enum LineResolver {
    /// - Parameter board: the Raspberry Pi this runs on, if it is one: a GPIO name on a kernel
    ///   showing no chip for its header is then explained as that, not as a missing line.
    public static func resolve(_ selector: LineSelector, in chips: [ChipInfo], board: RaspberryPiBoard? = nil) throws -> ResolvedLine {
        let candidates = selector.chip.map { chip in chips.filter { $0.matches(chip: chip) } } ?? chips
        for chip in candidates {
            if let line = chip.lines.first(where: { $0.name == selector.name }) {
                return ResolvedLine(chip: chip, offset: line.offset, name: line.name)
            }
        }
        if let bcm = RaspberryPiHeader.bcmNumber(selector.name) {
            if let chip = candidates.first(where: { bcm < RaspberryPiHeader.bcmLineCount(of: $0) ?? 0 }) {
                return ResolvedLine(chip: chip, offset: bcm, name: selector.name)
            }
            if let board, !chips.contains(where: { RaspberryPiHeader.isPinController(label: $0.label) }) {
                throw GPIOError.headerChipMissing(selector, board: board, chips: chips.map(\.summary))
            }
        }
        if let chip = selector.chip, candidates.isEmpty {
            throw GPIOError.chipNotFound(chip, available: chips.map(\.summary))
        }
        let names = candidates.flatMap { $0.lines.map(\.name) }.filter { !$0.isEmpty }
        throw GPIOError.lineNotFound(selector, closest: closestNames(to: selector.name, among: names))
    }

    /// The Raspberry Pi GPIO names (`GPIO<n>`, `pin<k>`) that find line `offset` of `chip` only
    /// as an alias: the line does not carry the name itself, and no other line does. Empty for
    /// a line of any chip but the SoC's pin controller.
    public static func aliases(ofLine offset: Int, on chip: ChipInfo, among chips: [ChipInfo]) -> [String] {
        guard offset < RaspberryPiHeader.bcmLineCount(of: chip) ?? 0 else { return [] }
        let names = ["GPIO\(offset)"] + (RaspberryPiHeader.headerPin(ofGPIO: offset).map { ["pin\($0)"] } ?? [])
        let own = chip.lines.first { $0.offset == offset }?.name
        return names.filter { name in
            guard name != own, let found = try? resolve(LineSelector(name), in: chips) else { return false }
            return found.chip.path == chip.path && found.offset == offset
        }
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
