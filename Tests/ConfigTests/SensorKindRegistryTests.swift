import Foundation
import Sensors
import Testing

@testable import Config

/// `SensorKinds.all` is the one list of kinds: what a kind declares there must be what the
/// parser accepts and the reference documents, or a new kind would fail in a confusing way.
struct SensorKindRegistryTests {
    @Test func kindNamesAreUnique() {
        let names = SensorKinds.all.map(\.name)
        #expect(Set(names).count == names.count, "\(names)")
    }

    /// The parser takes a sensor's accepted keys from the reference: a setting a kind lists
    /// without a reference row would be refused as an unknown key.
    @Test func everySettingOfEveryKindIsDocumented() {
        let documented = Set(ConfigReference.keys(under: "sensors[]"))
        for kind in SensorKinds.all {
            let missing = (ConfigParser.commonSensorSettings + kind.settings).filter { !documented.contains($0) }
            #expect(missing.isEmpty, "kind \(kind.name): no reference row for \(missing)")
        }
    }

    /// A kind's own reference rows are for its own settings (or their nested keys).
    @Test func everyReferenceRowOfAKindIsOneOfItsSettings() {
        for kind in SensorKinds.all {
            for row in kind.reference {
                let top = String(row.key.prefix { $0 != "." })
                #expect(kind.settings.contains(top), "kind \(kind.name) documents \(row.key), not one of its settings")
            }
        }
    }

    /// Shared keys get one row naming each kind's default and meaning.
    @Test func aKeySharedByKindsIsOneRowNamingEachKind() throws {
        let window = try #require(ConfigReference.entries.first { $0.key == "sensors[].window" })
        #expect(window.defaultValue == "10s (`rate`), 3s (`tachometer`), 1s (`pulse_width`)")
        #expect(
            window.meaning
                == "`rate`, `tachometer`: sliding window the rate is measured over; `pulse_width`: averaging period.")
        #expect(ConfigReference.entries.filter { $0.key == "sensors[].interval" }.count == 1)
    }

    /// The kinds table in docs/configuration.md lists every kind with the settings it accepts.
    @Test func theDocsListEveryKindWithItsSettings() throws {
        let docs = try String(
            contentsOf: ValidConfigTests.repositoryRoot.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var documented: [String: String] = [:]
        for row in docs.split(separator: "\n") where row.hasPrefix("| `") {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 3, !cells[0].contains("[]") else { continue }
            for name in cells[0].split(separator: ",") {
                let name = name.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["`"])
                documented[name] = documented[name] ?? cells[1]  // the kinds table comes first
            }
        }
        for kind in SensorKinds.all {
            #expect(
                documented[kind.name] == kind.settings.map { "`\($0)`" }.joined(separator: ", "),
                "docs/configuration.md's kinds table: \(kind.name)")
        }
    }
}
