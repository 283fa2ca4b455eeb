import Testing

@testable import Gateway

/// A ref names a characteristic by its positions and its path. The path is kept as a number
/// (`CharacteristicPaths`); these check it still behaves as the text it stands for.
struct CharacteristicRefTests {
    @Test func thePathReadsBackAsGiven() {
        let ref = CharacteristicRef(service: 2, characteristic: 5, path: "kitchen/door contact")
        #expect(ref.path == "kitchen/door contact")
        #expect(ref.description == "kitchen/door contact")
    }

    /// A reload's layout may put another characteristic at the same positions: its ref differs.
    @Test func refsAreEqualOnlyWithTheSamePositionsAndPath() {
        let door = CharacteristicRef(service: 0, characteristic: 1, path: "hall/door")
        #expect(door == CharacteristicRef(service: 0, characteristic: 1, path: "hall/door"))
        #expect(door != CharacteristicRef(service: 0, characteristic: 1, path: "hall/window"))
        #expect(door != CharacteristicRef(service: 0, characteristic: 2, path: "hall/door"))
        #expect(door != CharacteristicRef(service: 1, characteristic: 1, path: "hall/door"))
        let table: [CharacteristicRef: Int] = [door: 1, CharacteristicRef(service: 0, characteristic: 1, path: "hall/window"): 2]
        #expect(table[CharacteristicRef(service: 0, characteristic: 1, path: "hall/door")] == 1)
    }

    /// Refs made on different threads for the same path agree (the table is shared, under a lock).
    @Test func refsMadeConcurrentlyAgree() async {
        let refs = await withTaskGroup(of: CharacteristicRef.self) { group in
            for index in 0..<64 {
                group.addTask { CharacteristicRef(service: 0, characteristic: 0, path: "concurrent/\(index % 4)") }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(refs.map(\.path)) == ["concurrent/0", "concurrent/1", "concurrent/2", "concurrent/3"])
        #expect(Set(refs).count == 4)
    }
}
