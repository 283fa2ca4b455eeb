import Testing

@testable import GPIO

@Suite struct EdgeProcessingTests {
    @Test(arguments: [("GPIO17", "GPIO71", 2), ("", "abc", 3), ("kitten", "sitting", 3), ("SIM0", "SIM0", 0)])
    func editDistance(a: String, b: String, distance: Int) {
        #expect(LineResolver.editDistance(Array(a), Array(b)) == distance)
    }

    @Test func closestNamesIgnoreFarOffOnes() {
        #expect(LineResolver.closestNames(to: "gpio4", among: ["GPIO4", "GPIO14", "ID_SDA", "SPI_MOSI"]) == ["GPIO4", "GPIO14"])
        #expect(LineResolver.closestNames(to: "TOTALLY_ELSE", among: ["GPIO4"]).isEmpty)
    }

    @Test func sequenceGapsAreCountedExactly() {
        var detector = LossDetector(mode: .sequenceNumbers)
        let missing = [3, 4, 7, 8, 12].map {
            detector.missing(before: EdgeEvent(edge: .rising, timestampNs: 0, sequence: UInt64($0)))
        }
        #expect(missing == [2, 0, 2, 0, 3])  // a request's sequence starts at 1
    }

    @Test func withoutSequenceNumbersRepeatedEdgesMeanLoss() {
        // libgpiod v1: rising, falling, rising, rising (a falling was lost), falling, falling.
        var detector = LossDetector(mode: .edgeAlternation)
        let edges: [Edge] = [.rising, .falling, .rising, .rising, .falling, .falling]
        let missing = edges.map { detector.missing(before: EdgeEvent(edge: $0, timestampNs: 0, sequence: 0)) }
        #expect(missing == [0, 0, 0, 1, 0, 1])
    }

    @Test func ringOverwritesTheOldestAndCountsThem() {
        var ring = EdgeEventRing(capacity: 3)
        for n in 1...5 { ring.append(EdgeEvent(edge: .rising, timestampNs: UInt64(n), sequence: UInt64(n))) }
        var events = [EdgeEvent(edge: .falling, timestampNs: 0, sequence: 0)]
        ring.drain(into: &events)
        #expect(events.map(\.sequence) == [0, 3, 4, 5])  // appended after what was there
        #expect(ring.takeOverwritten() == 2)
        events = []
        ring.drain(into: &events)
        #expect(events.isEmpty)
        // Used again after a drain, and full again: the oldest is overwritten as before.
        for n in 6...10 { ring.append(EdgeEvent(edge: .falling, timestampNs: UInt64(n), sequence: UInt64(n))) }
        ring.drain(into: &events)
        #expect(events.map(\.sequence) == [8, 9, 10])
        #expect(ring.takeOverwritten() == 2)
        ring.append(EdgeEvent(edge: .rising, timestampNs: 11, sequence: 11))
        events = []
        ring.drain(into: &events)
        #expect(events.map(\.sequence) == [11])
        #expect(ring.takeOverwritten() == 0)
    }

    @Test func softwareDebounceMatchesTheKernel() {
        var debouncer = SoftwareDebouncer(periodNs: 100, initialLevel: false)
        #expect(debouncer.feed(.rising, at: 1_000) == nil)
        #expect(debouncer.feed(.falling, at: 1_050) == nil)  // bounce: back to the stable level
        #expect(debouncer.deadline == nil)
        #expect(debouncer.feed(.rising, at: 1_060) == nil)
        #expect(debouncer.deadline == 1_160)
        #expect(debouncer.flush(through: 1_159) == nil)
        let confirmed = debouncer.flush(through: 1_160)
        #expect(confirmed?.0 == .rising && confirmed?.1 == 1_160)
        #expect(debouncer.stableLevel)
    }
}
