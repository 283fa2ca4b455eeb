import Config
import Foundation
import TestHarness
import Testing

/// Broken input gets errors, never a crash: the demo configuration mangled in many
/// deterministic ways must either load or throw `ConfigError` with at least one located issue.
struct RobustnessTests {
    static let replacements = [
        "", "-", ":", "[", "{", "~", "0", "-1", "1e400", "99999999999999999999s",
        "0x", "\"", "'", "#", "&a", "*a", "!!int", "ÿ", "\t", "  "
    ]

    @Test func mangledConfigurationsNeverCrash() throws {
        let path = ValidConfigTests.repositoryRoot.appendingPathComponent("deploy/config/demo.yaml").path
        let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        // Seeded, so every run mangles the same way.
        var random = SplitMix64(seed: 2026)
        var rejected = 0
        for _ in 0..<400 {
            var mangled = lines
            for _ in 0...random.next(below: 3) {
                let index = random.next(below: mangled.count)
                switch random.next(below: 4) {
                case 0: mangled.remove(at: index)
                case 1: mangled.insert(mangled[random.next(below: mangled.count)], at: index)
                case 2:
                    let words = mangled[index].split(separator: " ", omittingEmptySubsequences: false)
                    var changed = words.map(String.init)
                    changed[random.next(below: changed.count)] = Self.replacements[random.next(below: Self.replacements.count)]
                    mangled[index] = changed.joined(separator: " ")
                default: mangled[index] = String(mangled[index].dropFirst(random.next(below: 4)))
                }
            }
            do {
                _ = try ConfigLoader.load(yaml: mangled.joined(separator: "\n"))
            } catch {
                rejected += 1
                #expect(!error.errors.isEmpty)
                #expect(error.errors.allSatisfy { !$0.message.isEmpty })
            }
        }
        // Most manglings must be caught; a few (a dropped comment, a removed optional key) are harmless.
        #expect(rejected > 200)
    }
}
