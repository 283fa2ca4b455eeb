import Foundation
import TestHarness
import Testing

@testable import Gateway

/// The BTHome encryption counter: never backwards across restarts, the file written once per
/// reservation rather than per packet.
struct BTHomeCounterTests {
    static func stored(_ directory: URL) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(BTHomeCounter.fileName), encoding: .utf8)
    }

    /// `take` outside the expectation macros, which cannot call mutating members.
    func take(_ counter: inout BTHomeCounter, _ count: Int) -> [UInt32?] {
        (0..<count).map { _ in counter.take() }
    }

    @Test func aFirstStartReservesAheadAndCountsFromZero() throws {
        let directory = try temporaryDirectory("bthome-counter")
        var counter = try BTHomeCounter.load(stateDirectory: directory.path)
        #expect(try Self.stored(directory) == "1024\n")
        #expect(take(&counter, 3) == [0, 1, 2])
    }

    /// A restart starts at the stored limit: above every counter the last run may have sent.
    @Test func aRestartStartsAboveEverythingSentBefore() throws {
        let directory = try temporaryDirectory("bthome-counter")
        var first = try BTHomeCounter.load(stateDirectory: directory.path)
        let sent = take(&first, 10).compactMap { $0 }
        var second = try BTHomeCounter.load(stateDirectory: directory.path)
        let next = try #require(take(&second, 1).first ?? nil)
        #expect(next > sent.max()!)
        #expect(next == 1024)
        #expect(try Self.stored(directory) == "2048\n")
    }

    /// Half the reservation used: the next limit is due once (one write at a time); until it is
    /// written, counters run out at the old limit rather than going beyond what the file says.
    @Test func theNextLimitIsDueAtHalfTheReservation() {
        var counter = BTHomeCounter(path: "/nonexistent/bthome.counter", next: 0, limit: 1024)
        #expect(counter.reservationDue() == nil)
        #expect(take(&counter, 512).allSatisfy { $0 != nil })
        #expect(counter.reservationDue() == 2048)
        #expect(counter.reservationDue() == nil, "one write at a time")
        #expect(take(&counter, 512).last == 1023)
        #expect(counter.take() == nil, "nothing beyond the persisted limit")
        counter.reserved(2048, written: false)
        #expect(counter.take() == nil, "a failed write reserves nothing")
        #expect(counter.reservationDue() == 2048, "and is asked for again")
        counter.reserved(2048, written: true)
        #expect(counter.take() == 1024)
    }

    @Test func aCounterAtItsEndReservesNoMore() {
        var counter = BTHomeCounter(path: "/nonexistent/bthome.counter", next: .max - 10, limit: .max - 10)
        #expect(counter.reservationDue() == .max)
        counter.reserved(.max, written: true)
        #expect(take(&counter, 10).last == UInt32.max - 1)
        #expect(counter.take() == nil)
        #expect(counter.reservationDue() == nil)
    }

    @Test func aBrokenFileIsAnErrorNamingIt() throws {
        let directory = try temporaryDirectory("bthome-counter")
        let path = directory.appendingPathComponent(BTHomeCounter.fileName).path
        try "12ab\n".write(toFile: path, atomically: true, encoding: .utf8)
        let error = #expect(throws: BTHomeCounterError.self) {
            try BTHomeCounter.load(stateDirectory: directory.path)
        }
        #expect(error?.description == "BTHome encryption counter \(path): not a counter: \"12ab\"")
    }

    /// A state directory that cannot be made stops the start with the file's name and why.
    @Test func anUnusableStateDirectoryIsAnErrorNamingIt() {
        let error = #expect(throws: BTHomeCounterError.self) {
            try BTHomeCounter.load(stateDirectory: "/dev/null/state")
        }
        #expect(
            error?.description
                == "BTHome encryption counter /dev/null/state/bthome.counter: cannot open /dev/null/state/bthome.counter: Not a directory"
        )
    }
}
