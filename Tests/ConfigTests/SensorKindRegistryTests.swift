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
        #expect(window.defaultValue == "10s (`rate`), 1s (`pulse_width`)")
        #expect(window.meaning == "`rate`: sliding window the rate is measured over; `pulse_width`: averaging period.")
        #expect(ConfigReference.entries.filter { $0.key == "sensors[].interval" }.count == 1)
    }
}
